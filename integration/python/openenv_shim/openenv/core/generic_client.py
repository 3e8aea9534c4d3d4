"""A stand-in for openenv.core.generic_client.GenericEnvClient (tests only).

It has the real client's surface as the README uses it — the constructor
(base_url, connect_timeout_s, message_timeout_s, max_message_size_mb; no
headers), .sync(), reset(**kwargs), step(action_dict), state(), close() — and
the real client's result type: StepResult(observation, reward, done), where
observation is the payload's "observation" dict (so metadata is
result.observation["metadata"]). The frames are those of
../../../openenv_client_check.py (OpenEnv's EnvClient, §6): the base URL is
turned into ws(s)://.../ws with any credentials kept, and the WebSocket
library turns them into Authorization: Basic.

HARNESSD_SHIM_ADDR (host:port), when set, replaces the host and port of the
base URL, so that an example written for 127.0.0.1:8000 runs unchanged
against a test daemon on another port.
"""

import json
import os
import sys
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, Optional

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
import openenv_client_check as wirecheck  # noqa: E402


@dataclass
class StepResult:
    """OpenEnv's StepResult: observation, reward, done — nothing else."""

    observation: Dict[str, Any]
    reward: Optional[float] = None
    done: bool = False


def _redirect(base_url):
    addr = os.environ.get("HARNESSD_SHIM_ADDR")
    if not addr:
        return base_url
    u = urllib.parse.urlsplit(base_url)
    cred = u.netloc.rpartition("@")[0]
    return urllib.parse.urlunsplit((u.scheme, (cred + "@" if cred else "") + addr, u.path, u.query, u.fragment))


class GenericEnvClient:
    def __init__(self, base_url, connect_timeout_s=10.0, message_timeout_s=60.0, max_message_size_mb=100.0, provider=None, mode=None):
        self._url = wirecheck.ws_url(_redirect(base_url))
        self._connect_timeout = connect_timeout_s
        self._timeout = message_timeout_s
        self._ws = None

    def connect(self):
        if self._ws is None:
            try:
                import websockets.sync.client  # noqa: F401

                cls = wirecheck.LibraryWebSocket
            except ImportError:
                cls = wirecheck.MinimalWebSocket
            self._ws = cls(self._url, open_timeout=self._connect_timeout)
        return self

    def sync(self):
        return self  # this stand-in is synchronous already

    def _send_and_receive(self, message):
        self.connect()
        self._ws.send(json.dumps(message))
        data = json.loads(self._ws.recv(self._timeout))
        if data.get("type") == "error":
            err = data.get("data", {})
            raise RuntimeError("Server error: %s (code: %s)" % (err.get("message", "Unknown error"), err.get("code", "UNKNOWN")))
        return data

    @staticmethod
    def _parse_result(payload):
        return StepResult(observation=payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False))

    def reset(self, **kwargs):
        return self._parse_result(self._send_and_receive({"type": "reset", "data": kwargs})["data"])

    def step(self, action, **kwargs):
        return self._parse_result(self._send_and_receive({"type": "step", "data": action})["data"])

    def state(self):
        return self._send_and_receive({"type": "state"})["data"]

    def close(self):
        if self._ws is not None:
            try:
                self._ws.send(json.dumps({"type": "close"}))
            except OSError:
                pass
            self._ws.close()
            self._ws = None
