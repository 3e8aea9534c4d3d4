#!/bin/bash
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ]; then
  echo "PASS"; echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: answer.txt is '$(cat /app/answer.txt 2>/dev/null)'"; echo 0 > /logs/verifier/reward.txt
fi
