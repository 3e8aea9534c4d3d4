#!/bin/bash
if [ "$(cat /work/count.txt 2>/dev/null | tr -d '[:space:]')" = 3 ]; then
  echo '{"reward": 1.0, "format": 1.0}' > /logs/verifier/reward.json
else
  echo '{"reward": 0.0, "format": 0.0}' > /logs/verifier/reward.json
fi
