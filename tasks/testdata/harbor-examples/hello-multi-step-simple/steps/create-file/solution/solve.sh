#!/bin/bash
echo Hello > /app/greeting.txt
