#!/bin/bash
# HARNESSD-TEST-MARKER-7f3a: the agent must never see this file.
mkdir -p /logs/verifier
want="$(tr '\n' ' ' < /app/src/words.txt | sed 's/ $//')"
if [ "$(cat /app/greeting.txt 2>/dev/null)" = "$want" ] && [ "$GREETING_FILE" = greeting.txt ]; then
  echo "PASS: greeting matches"
  echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: greeting.txt is '$(cat /app/greeting.txt 2>/dev/null)', want '$want'"
  echo 0 > /logs/verifier/reward.txt
fi
