#!/bin/bash
if [ "$(cat /app/secret.txt 2>/dev/null)" = "harbor-mcp-secret-12-34-5" ]; then
  echo "PASS: the secret"
  echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: secret.txt is '$(cat /app/secret.txt 2>/dev/null)'"
  echo 0 > /logs/verifier/reward.txt
fi
