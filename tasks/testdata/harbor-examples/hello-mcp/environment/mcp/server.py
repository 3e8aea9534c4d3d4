"""A minimal MCP server over stdio (newline-delimited JSON-RPC 2.0) with one
tool, get_secret."""
import json
import sys

SECRET = "harbor-mcp-secret-" + "-".join(["12", "34", "5"])

TOOL = {
    "name": "get_secret",
    "description": "Return the secret value.",
    "inputSchema": {"type": "object", "properties": {}},
}


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue  # a notification
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        reply(msg_id, {"protocolVersion": version, "capabilities": {"tools": {}},
                       "serverInfo": {"name": "hello", "version": "1.0"}})
    elif method == "tools/list":
        reply(msg_id, {"tools": [TOOL]})
    elif method == "tools/call" and msg.get("params", {}).get("name") == "get_secret":
        reply(msg_id, {"content": [{"type": "text", "text": SECRET}], "isError": False})
    elif method == "ping":
        reply(msg_id, {})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id,
                                     "error": {"code": -32601, "message": "no such method"}}) + "\n")
        sys.stdout.flush()
