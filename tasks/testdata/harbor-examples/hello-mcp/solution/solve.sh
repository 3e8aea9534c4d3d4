#!/bin/bash
# The oracle calls the tool as an MCP client would: initialize, then
# tools/call get_secret over the server's stdio.
set -euo pipefail
python3 - <<'PY'
import json, subprocess
p = subprocess.Popen(["python3", ".mcp/server.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())["result"]
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "oracle", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
secret = call(2, "tools/call", {"name": "get_secret", "arguments": {}})["content"][0]["text"]
p.stdin.close()
p.wait()
open("/app/secret.txt", "w").write(secret + "\n")
PY
