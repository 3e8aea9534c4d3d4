#!/bin/bash
want="$(printf 'Hello\nWorld')"
if [ "$(cat /app/greeting.txt 2>/dev/null)" = "$want" ] && [ "$(wc -l < /app/greeting.txt)" = "$EXPECTED_LINES" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: greeting.txt is '$(cat /app/greeting.txt 2>/dev/null)'"
  echo 0 > /logs/verifier/reward.txt
fi
