#!/usr/bin/env python3
"""Wire-compatibility check: speak to harnessd exactly as OpenEnv's Python
EnvClient / GenericEnvClient do (openenv-protocol.md §6) and check the replies.

Standard library only. When the `websockets` package is importable it is used
(as OpenEnv's client does); otherwise, or with --transport minimal, a minimal
RFC 6455 client written here is used (masking, text frames, fragmentation,
ping/pong, close).

The server under test must serve the jsonl test harness (`testharness agent`)
with the `testharness tools` tool server and a rubric that gives reward 1.0 to
the response "add -> 5", and allow at least two sessions.

    python3 openenv_client_check.py --base-url http://127.0.0.1:8000 [--token T]
    python3 openenv_client_check.py --base-url http://harnessd:TOKEN@127.0.0.1:8000

With credentials in the base URL no header is passed: as OpenEnv's unmodified
GenericEnvClient does (its constructor takes no headers), the URL goes to the
WebSocket library, which the `websockets` package turns into
`Authorization: Basic base64(user:password)` (websockets.uri.parse_uri and
websockets.headers.build_authorization_basic); the minimal client here does
the same.

Exit status 0 when every check passes, 1 otherwise (the failed check is printed).
"""

import argparse
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import urllib.parse

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_FRAME = 100 * 1024 * 1024  # OpenEnv's client accepts frames up to 100 MiB


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


def ws_url(base_url):
    """OpenEnv's URL rule: http->ws, https->wss, bare host->ws, strip the
    trailing slash, append /ws."""
    if base_url.startswith("http://"):
        url = "ws://" + base_url[len("http://"):]
    elif base_url.startswith("https://"):
        url = "wss://" + base_url[len("https://"):]
    elif base_url.startswith(("ws://", "wss://")):
        url = base_url
    else:
        url = "ws://" + base_url
    return url.rstrip("/") + "/ws"


class ConnectionClosed(Exception):
    def __init__(self, code, reason):
        super().__init__("connection closed: %s %s" % (code, reason))
        self.code = code
        self.reason = reason


def basic_authorization(u):
    """The Authorization header the `websockets` library sends for a URI with
    user info: the user name and password percent-decoded, then
    "Basic " + base64("user:password"); None without user info."""
    if u.username is None and u.password is None:
        return None
    user = urllib.parse.unquote(u.username or "")
    password = urllib.parse.unquote(u.password or "")
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class MinimalWebSocket:
    """A client-side RFC 6455 WebSocket over a plain TCP socket."""

    def __init__(self, url, headers=None, open_timeout=10.0):
        u = urllib.parse.urlparse(url)
        if u.scheme != "ws":
            raise ValueError("the minimal client speaks ws:// only, not %r" % u.scheme)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=open_timeout)
        self.buf = b""
        self.closed = False
        key = base64.b64encode(os.urandom(16)).decode()
        path = (u.path or "/") + ("?" + u.query if u.query else "")
        host = u.hostname + (":%d" % u.port if u.port else "")
        headers = dict(headers or {})
        auth = basic_authorization(u)
        if auth is not None and not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = auth
        lines = [
            "GET %s HTTP/1.1" % path,
            "Host: %s" % host,
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: %s" % key,
            "Sec-WebSocket-Version: 13",
            "User-Agent: openenv-client-check",
        ]
        for k, v in (headers or {}).items():
            lines.append("%s: %s" % (k, v))
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("connection closed during the handshake")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status, *hdrs = head.decode("latin-1").split("\r\n")
        parts = status.split(" ", 2)
        if len(parts) < 2 or parts[1] != "101":
            raise ConnectionError("handshake refused: %s" % status)
        got = {}
        for h in hdrs:
            k, _, v = h.partition(":")
            got[k.strip().lower()] = v.strip()
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if got.get("sec-websocket-accept") != want:
            raise ConnectionError("bad Sec-WebSocket-Accept")
        self.pongs = []

    # -- frames ------------------------------------------------------------
    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def _read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise ConnectionClosed(1006, "connection lost")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _read_frame(self):
        b0, b1 = self._read_exact(2)
        fin, opcode = b0 & 0x80, b0 & 0x0F
        if b0 & 0x70:
            raise ConnectionError("reserved bits set by the server")
        if b1 & 0x80:
            raise ConnectionError("the server masked a frame")
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._read_exact(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._read_exact(8))
        if n > MAX_FRAME:
            raise ConnectionError("frame of %d bytes exceeds the client's limit" % n)
        return bool(fin), opcode, self._read_exact(n)

    def ping(self, payload=b"openenv-check"):
        self._send_frame(0x9, payload)

    def send(self, text):
        self._send_frame(0x1, text.encode("utf-8"))

    def recv(self, timeout):
        """One text message; answers pings and collects pongs meanwhile."""
        self.sock.settimeout(timeout)
        parts, kind = [], None
        while True:
            fin, opcode, payload = self._read_frame()
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0xA:
                self.pongs.append(payload)
                continue
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                if not self.closed:
                    self.closed = True
                    try:
                        self._send_frame(0x8, payload[:2])
                    except OSError:
                        pass
                raise ConnectionClosed(code, payload[2:].decode("utf-8", "replace"))
            if opcode in (0x1, 0x2):
                kind, parts = opcode, [payload]
            elif opcode == 0x0:
                parts.append(payload)
            else:
                raise ConnectionError("unknown opcode %d" % opcode)
            if fin:
                data = b"".join(parts)
                if kind != 0x1:
                    raise ConnectionError("binary frame from the server")
                return data.decode("utf-8")

    def wait_pong(self, timeout):
        self.sock.settimeout(timeout)
        while not self.pongs:
            fin, opcode, payload = self._read_frame()
            if opcode == 0xA:
                self.pongs.append(payload)
            elif opcode == 0x9:
                self._send_frame(0xA, payload)
            else:
                raise ConnectionError("unexpected frame while waiting for a pong: %d" % opcode)
        return self.pongs.pop(0)

    def close(self, timeout=5.0):
        if not self.closed:
            self.closed = True
            try:
                self._send_frame(0x8, struct.pack("!H", 1000))
                self.sock.settimeout(timeout)
                while True:  # wait for the server's close frame
                    _, opcode, _ = self._read_frame()
                    if opcode == 0x8:
                        break
            except (OSError, ConnectionClosed, ConnectionError):
                pass
        self.sock.close()


class LibraryWebSocket:
    """The same surface over the `websockets` package (sync client)."""

    def __init__(self, url, headers=None, open_timeout=10.0):
        from websockets.sync.client import connect

        self.ws = connect(url, open_timeout=open_timeout, max_size=MAX_FRAME, additional_headers=headers or {})

    def send(self, text):
        self.ws.send(text)

    def recv(self, timeout):
        from websockets.exceptions import ConnectionClosed as LibClosed

        try:
            return self.ws.recv(timeout=timeout)
        except LibClosed as e:
            rcvd = getattr(e, "rcvd", None)
            raise ConnectionClosed(rcvd.code if rcvd else 1006, rcvd.reason if rcvd else "")

    def ping(self, payload=b"openenv-check"):
        self._pong = self.ws.ping(payload)

    def wait_pong(self, timeout):
        if not self._pong.wait(timeout):
            raise TimeoutError("no pong")
        return b"openenv-check"

    def close(self, timeout=5.0):
        self.ws.close()


class GenericEnvClientLike:
    """The frames and result parsing of OpenEnv's GenericEnvClient (§6)."""

    def __init__(self, base_url, transport, message_timeout_s=60.0, headers=None):
        self.url = ws_url(base_url)
        self.base_url = base_url
        self.transport = transport
        self.timeout = message_timeout_s
        self.headers = headers
        cls = LibraryWebSocket if transport == "websockets" else MinimalWebSocket
        self.ws = cls(self.url, headers=headers, open_timeout=10.0)

    def _send_and_receive(self, message):
        self.ws.send(json.dumps(message))
        data = json.loads(self.ws.recv(self.timeout))  # exactly one frame per request
        if data.get("type") == "error":
            err = data.get("data", {})
            raise RuntimeError("Server error: %s (code: %s)" % (err.get("message", "Unknown error"), err.get("code", "UNKNOWN")))
        return data

    @staticmethod
    def _parse_result(payload):
        return {
            "observation": payload.get("observation") or {},
            "reward": payload.get("reward"),
            "done": payload.get("done") or False,
            "metadata": payload.get("metadata") or {},
        }

    def reset(self, **kwargs):
        return self._parse_result(self._send_and_receive({"type": "reset", "data": kwargs})["data"])

    def step(self, action):
        return self._parse_result(self._send_and_receive({"type": "step", "data": action})["data"])

    def state(self):
        return self._send_and_receive({"type": "state"})["data"]

    def new_session(self):
        return GenericEnvClientLike(self.base_url, self.transport, self.timeout, self.headers)

    def close(self):
        try:
            self.ws.send(json.dumps({"type": "close"}))
        except OSError:
            pass
        self.ws.close()


def check_event(ev):
    check(isinstance(ev, dict), "an event is an object: %r" % (ev,))
    check(isinstance(ev.get("type"), str), "event type is a string: %r" % (ev,))
    check(isinstance(ev.get("timestamp"), (int, float)), "event timestamp is a number: %r" % (ev,))
    check(isinstance(ev.get("data"), dict), "event data is an object: %r" % (ev,))


def check_result(r, what):
    check(isinstance(r["observation"], dict), what + ": observation is an object")
    check(r["reward"] is None or isinstance(r["reward"], (int, float)), what + ": reward is a number or null")
    check(isinstance(r["done"], bool), what + ": done is a boolean")
    check(isinstance(r["metadata"], dict), what + ": top-level metadata is an object")
    check(r["observation"].get("metadata") == r["metadata"], what + ": observation.metadata equals the top-level metadata")


def run(args):
    checks = []

    def ok(what):
        checks.append(what)
        print("ok  " + what, flush=True)

    check(ws_url("http://h:1/") == "ws://h:1/ws", "URL rule http")
    check(ws_url("https://h") == "wss://h/ws", "URL rule https")
    check(ws_url("h:8000") == "ws://h:8000/ws", "URL rule bare host")
    check(ws_url("http://u:p@h:1") == "ws://u:p@h:1/ws", "URL rule keeps credentials")
    check(basic_authorization(urllib.parse.urlparse("ws://harnessd:a%2Fb@h:1/ws")) == "Basic " + base64.b64encode(b"harnessd:a/b").decode(),
          "credentials become Basic, percent-decoded")
    ok("URL conversion as EnvClient does it")

    headers = {"Authorization": "Bearer " + args.token} if args.token else None
    env = GenericEnvClientLike(args.base_url, args.transport, args.message_timeout, headers)

    try:
        env.step({"message": "too early"})
        raise CheckFailed("step before reset did not raise")
    except RuntimeError as e:
        check("(code: EXECUTION_ERROR)" in str(e), "step before reset: %s" % e)
    ok("step before reset raises EXECUTION_ERROR")

    r = env.reset(episode_id="py-episode-1", seed=3)
    check_result(r, "reset")
    check(r["done"] is False, "reset: done is false")
    check(r["metadata"].get("episode_id") == "py-episode-1", "reset: episode_id echoed: %r" % r["metadata"])
    check("add" in r["metadata"].get("injected_tools", []), "reset: injected_tools lists add")
    ok("reset(episode_id=..., seed=...) -> observation, reward, done, metadata")

    s = env.state()
    check(s.get("episode_id") == "py-episode-1", "state episode_id: %r" % s)
    check(s.get("step_count") == 0, "state step_count 0: %r" % s)
    ok("state() -> episode_id, step_count")

    r = env.step({"message": 'tool add {"a":2,"b":3}'})
    check_result(r, "step")
    md = r["metadata"]
    events = md.get("turn_events")
    check(isinstance(events, list) and events, "step: metadata.turn_events is a non-empty list")
    for ev in events:
        check_event(ev)
    check(events[-1]["type"] == "turn_complete", "the last turn event is turn_complete")
    calls = [e for e in events if e["type"] == "tool_call" and e["data"].get("tool_name") == "add"]
    check(calls, "a tool_call event for add")
    check(md.get("response") == "add -> 5", "response: %r" % md.get("response"))
    check(md.get("turn_number") == 1, "turn_number 1")
    check(r["reward"] == 1.0, "rubric reward 1.0, got %r" % r["reward"])
    check(r["done"] is False, "done false after a plain turn")
    ok("step({'message': ...}) -> top-level metadata.turn_events, response, rubric reward")

    r = env.step({"message": "history", "metadata": {"source": "python"}})
    check(r["metadata"].get("response") == 'history: tool add {"a":2,"b":3} | history', "same harness: %r" % r["metadata"].get("response"))
    ok("step with action metadata; the conversation persists")

    for bad, code in (({"message": "x", "bogus": 1}, "VALIDATION_ERROR"), ({}, "VALIDATION_ERROR"), ({"message": 7}, "VALIDATION_ERROR")):
        try:
            env.step(bad)
            raise CheckFailed("invalid action %r did not raise" % bad)
        except RuntimeError as e:
            check(str(e).startswith("Server error: ") and "(code: %s)" % code in str(e), "invalid action: %s" % e)
    env.ws.send("this is not json")
    reply = json.loads(env.ws.recv(args.message_timeout))
    check(reply.get("type") == "error" and reply["data"].get("code") == "INVALID_JSON", "invalid JSON: %r" % reply)
    s = env.state()
    check(s.get("step_count") == 2, "the session survives error frames: %r" % s)
    ok("error frames raise RuntimeError('Server error: ... (code: ...)') and the session lives on")

    env.ws.ping()
    env.ws.wait_pong(args.message_timeout)
    ok("the server answers pings")

    other = env.new_session()
    r2 = other.reset()
    check_result(r2, "second session reset")
    check(r2["metadata"].get("episode_id") not in (None, "py-episode-1"), "second session has its own episode")
    s2 = other.state()
    check(s2.get("step_count") == 0, "second session is independent: %r" % s2)
    check(env.state().get("step_count") == 2, "the first session is unaffected")
    other.close()
    ok("new_session() is an independent session")

    r = env.step({"message": "reply finished;;done"})
    check(r["done"] is True and r["metadata"].get("harness_done") is True, "done turn: %r" % r)
    ok("a done turn -> done true")

    big = "x" * (200 * 1024)
    env.reset()
    r = env.step({"message": "reply " + big})
    check(r["metadata"].get("response") == big, "a 200 KiB frame round-trips")
    ok("frames above 32 KiB in both directions")

    env.close()
    env3 = GenericEnvClientLike(args.base_url, args.transport, args.message_timeout, headers)
    check_result(env3.reset(), "reset after close")
    env3.close()
    ok("close() then a fresh connection")
    print("PASS %d checks (%s transport)" % (len(checks), args.transport), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", required=True)
    p.add_argument("--token", default=os.environ.get("HARNESSD_API_TOKEN"))
    p.add_argument("--message-timeout", type=float, default=60.0)
    p.add_argument("--transport", choices=("auto", "websockets", "minimal"), default="auto")
    args = p.parse_args()
    if args.transport == "auto":
        try:
            import websockets.sync.client  # noqa: F401

            args.transport = "websockets"
        except ImportError:
            args.transport = "minimal"
    try:
        run(args)
    except (CheckFailed, RuntimeError, ConnectionError, ConnectionClosed, OSError, ValueError, KeyError) as e:
        print("FAIL %s: %s" % (type(e).__name__, e), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
