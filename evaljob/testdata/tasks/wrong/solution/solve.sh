#!/bin/bash
# a wrong answer on purpose: the tests give 0
echo 41 > /app/answer.txt
