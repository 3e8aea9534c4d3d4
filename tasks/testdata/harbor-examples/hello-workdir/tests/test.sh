#!/bin/bash
# The tests run in the workdir too.
if [ "$PWD" = /custom-workdir ] && [ "$(cat /custom-workdir/workdir.txt 2>/dev/null)" = /custom-workdir ]; then
  echo "PASS: workdir.txt says /custom-workdir"
  echo 1 > /logs/verifier/reward.txt
else
  echo "FAIL: PWD=$PWD, workdir.txt='$(cat /custom-workdir/workdir.txt 2>/dev/null)'"
  echo 0 > /logs/verifier/reward.txt
fi
