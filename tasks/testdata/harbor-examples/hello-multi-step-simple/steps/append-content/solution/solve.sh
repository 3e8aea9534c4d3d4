#!/bin/bash
cat /app/name.txt >> /app/greeting.txt
