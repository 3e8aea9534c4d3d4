#!/bin/bash
fail() { echo "FAIL: $*"; echo 0 > /logs/verifier/reward.txt; exit 0; }
[ "$(cat /app/whoami.txt 2>/dev/null)" = agent ] || fail "whoami.txt is '$(cat /app/whoami.txt 2>/dev/null)', want agent"
[ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ] || fail "hello.txt is '$(cat /app/hello.txt 2>/dev/null)'"
[ "$(stat -c %U /app/hello.txt)" = agent ] || fail "hello.txt belongs to $(stat -c %U /app/hello.txt), not agent"
[ "$(id -u)" = 0 ] || fail "the verifier runs as $(id -un), not root"
echo "PASS: the agent ran as agent, the verifier as root"
echo 1 > /logs/verifier/reward.txt
