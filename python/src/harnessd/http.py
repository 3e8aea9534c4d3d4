"""The daemon's HTTP routes the client uses besides ``/ws``: ``/health``
(liveness and capacity: ``active_sessions``, ``max_sessions``,
``draining``), ``/ready``, ``/metadata``, ``/tasks`` and the training export
``GET /episodes/{episode_id}/export`` (docs/gateway.md), and the policy
version route ``POST`` / ``GET /policy_version`` (docs/protocol.md,
"Policy versions"), and ``POST /fork`` (docs/fork.md). Standard library
only (urllib); the async callers run these in a thread.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from .errors import ProtocolError, TransportError, server_error
from .types import PolicyVersion, Sibling

__all__ = ["Health", "DaemonHTTP", "normalize_base_url"]


def normalize_base_url(base_url: str) -> str:
    """``host:port`` or ``http(s)://host:port[/prefix]`` without the
    trailing slash; ``ws(s)://`` is read as ``http(s)://``."""
    u = base_url.strip()
    if "://" not in u:
        u = "http://" + u
    p = urllib.parse.urlsplit(u)
    scheme = {"ws": "http", "wss": "https"}.get(p.scheme, p.scheme)
    if scheme not in ("http", "https"):
        raise ValueError(f"unsupported URL scheme {p.scheme!r} in {base_url!r}")
    return urllib.parse.urlunsplit((scheme, p.netloc, p.path.rstrip("/"), "", ""))


# A JSON escape of a UTF-16 surrogate (\uD800-\uDFFF): the only way a lone
# one reaches a decoded string. A match costs a walk of the value (an escaped
# backslash before "u" matches too: harmless).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_B = re.compile(rb"\\u[dD][89a-fA-F]")


def loads(text: str | bytes) -> Any:
    """json.loads for what the daemon sends, which carries a harness's JSON
    (tool arguments, extra fields, model calls): raises
    :class:`ProtocolError` for a value nested too deeply for Python's
    decoder (RecursionError past ~1,000 levels, which Go's encoder and
    decoder let through up to 10,000), and turns a lone surrogate that a
    ``\\ud800`` escape made into U+FFFD, as Go does: such a string cannot be
    encoded (print, a file, a tokenizer) and would fail the trainer later,
    far from the frame that brought it."""
    try:
        v = json.loads(text)
    except RecursionError:
        raise ProtocolError("a JSON value nested too deeply to decode (a harness's data, Python's recursion limit)") from None
    if _SURROGATE_ESCAPE.search(text) if isinstance(text, str) else _SURROGATE_ESCAPE_B.search(text):
        v = _scrub_surrogates(v)
    return v


def _fix(s: str) -> str:
    return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _scrub_surrogates(v: Any) -> Any:
    """v with every lone surrogate of its strings (keys too) as U+FFFD;
    iterative, since v may be nested as deep as the decoder allows."""
    if isinstance(v, str):
        return _fix(v)
    stack = [v]
    while stack:
        c = stack.pop()
        if isinstance(c, dict):
            for k in list(c):
                x = c[k]
                if isinstance(x, str):
                    x = _fix(x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
                if isinstance(k, str):
                    nk = _fix(k)
                    if nk != k:
                        del c[k]
                        k = nk
                c[k] = x
        elif isinstance(c, list):
            for i, x in enumerate(c):
                if isinstance(x, str):
                    c[i] = _fix(x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
    return v


@dataclass(frozen=True)
class Health:
    """A daemon's ``/health`` answer."""

    #: Sessions the daemon holds now (every client's, not only ours).
    active_sessions: int
    #: Its session limit (``--max-sessions``).
    max_sessions: int
    #: The daemon is shutting down: it takes no new sessions.
    draining: bool
    #: ``simulation`` or ``production``.
    mode: str
    #: The daemon's version.
    version: str
    #: The whole answer.
    raw: dict[str, Any]

    @property
    def free(self) -> int:
        """Sessions it can still open (0 while draining)."""
        return 0 if self.draining else max(0, self.max_sessions - self.active_sessions)


class DaemonHTTP:
    """HTTP calls to one daemon at ``base_url``, with ``token`` sent as
    ``Authorization: Bearer`` (``/health`` and ``/ready`` need none)."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 10.0) -> None:
        self.base_url = normalize_base_url(base_url)
        self.token = token
        self.timeout = timeout

    def _get(self, path: str, *, export: bool = False) -> Any:
        return self._call("GET", path, None, export=export)

    def _call(self, method: str, path: str, body: Any, *, export: bool = False) -> Any:
        payload = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=payload, method=method)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        if payload is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw_body = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                data = loads(raw)
            except ValueError:
                data = {"detail": raw.decode("utf-8", "replace")}
            if e.code == 503 and isinstance(data, dict) and "max_sessions" in data:
                data.setdefault("code", "CAPACITY_REACHED")
            if e.code == 422 and isinstance(data, dict) and isinstance(data.get("detail"), list) and "code" not in data:
                # FastAPI's shape of a refused field: the same
                # ValidationError a /ws error frame gives, with its errors.
                data = {"code": "VALIDATION_ERROR", "message": "; ".join(str(x.get("msg", x)) if isinstance(x, dict) else str(x) for x in data["detail"]),
                        "errors": data["detail"]}
            raise server_error(data, status=e.code, export=export) from None
        except (urllib.error.URLError, OSError) as e:
            raise TransportError(f"{method} {self.base_url}{path}: {getattr(e, 'reason', e)}", url=self.base_url) from e
        try:
            return loads(raw_body)
        except ProtocolError as e:
            raise ProtocolError(f"{method} {self.base_url}{path}: {e}") from None
        except ValueError as e:
            raise ProtocolError(f"{method} {self.base_url}{path}: the answer is not JSON: {e}") from e

    def health(self) -> Health:
        """``GET /health``."""
        d = self._get("/health")
        if not isinstance(d, dict):
            raise ProtocolError(f"{self.base_url}/health: not an object")
        return Health(
            active_sessions=int(d.get("active_sessions") or 0),
            max_sessions=int(d.get("max_sessions") or 0),
            draining=bool(d.get("draining")),
            mode=str(d.get("mode", "")),
            version=str(d.get("version", "")),
            raw=d,
        )

    def metadata(self) -> dict[str, Any]:
        """``GET /metadata``: the environment's name, harness and tasks."""
        d = self._get("/metadata")
        if not isinstance(d, dict):
            raise ProtocolError(f"{self.base_url}/metadata: not an object")
        return d

    def tasks(self) -> Any:
        """``GET /tasks``: the served taskset."""
        return self._get("/tasks")

    def export(self, episode_id: str) -> dict[str, Any]:
        """``GET /episodes/{episode_id}/export``: the episode's training
        export, live or from ``record_dir``. An episode without training
        traffic raises :class:`~harnessd.errors.ExportUnavailable` with the
        server's reason and status 409; an unknown one ``ExportUnavailable``
        without a reason and status 404."""
        d = self._get("/episodes/" + urllib.parse.quote(episode_id, safe="") + "/export", export=True)
        if not isinstance(d, dict):
            raise ProtocolError(f"{self.base_url}: an export that is not an object")
        return d

    def set_policy_version(self, version: int, *, session_id: str | None = None, episode_id: str | None = None) -> PolicyVersion:
        """``POST /policy_version``: make ``version`` (an integer >= 0) the
        policy version of the daemon, or of one session (the one with
        ``session_id``, or holding ``episode_id``) — whichever of the two
        was set last applies to a session's model calls. A call in flight
        when the version changes is exported with ``straddles_update``.
        Raises :class:`~harnessd.errors.ValidationError` for a bad version
        (status 422) and :class:`~harnessd.errors.ServerError` with status
        404 for no such session."""
        _check_version(version)
        body: dict[str, Any] = {"version": version}
        if session_id is not None:
            body["session_id"] = session_id
        if episode_id is not None:
            body["episode_id"] = episode_id
        return self._version(self._call("POST", "/policy_version", body))

    def policy_version(self, *, session_id: str | None = None, episode_id: str | None = None) -> PolicyVersion:
        """``GET /policy_version``: the daemon's version, or the effective
        version of one session (by ``session_id`` or ``episode_id``)."""
        q = {k: v for k, v in (("session_id", session_id), ("episode_id", episode_id)) if v is not None}
        return self._version(self._get("/policy_version" + ("?" + urllib.parse.urlencode(q) if q else "")))

    def fork(self, session_id: str, count: int, *, at_turn: int = 0, mechanism: str = "") -> list[Sibling]:
        """``POST /fork``: fork session ``session_id``'s live episode into
        ``count`` siblings, as :meth:`harnessd.AsyncEnv.fork` does over
        ``/ws`` (the same arguments, answer and refusals: a turn running
        :class:`~harnessd.errors.BusyError` with status 409, a bad field
        :class:`~harnessd.errors.ValidationError` with 422, no room
        :class:`~harnessd.errors.CapacityError` with 503, an unknown
        session :class:`~harnessd.errors.ServerError` with 404). Unlike the
        frame, it can be asked while the session's own connection waits
        for a step."""
        body: dict[str, Any] = {"session_id": session_id, "count": count}
        if at_turn:
            body["at_turn"] = at_turn
        if mechanism:
            body["mechanism"] = mechanism
        d = self._call("POST", "/fork", body)
        if not isinstance(d, dict):
            raise ProtocolError(f"{self.base_url}/fork: not an object")
        try:
            return Sibling.list_from_wire(d)
        except ValueError as e:
            raise ProtocolError(f"{self.base_url}/fork: {e}") from e

    def close_session(self, session_id: str) -> dict[str, Any]:
        """``POST /close`` of session ``session_id``: ends it at once when
        no socket holds it (a fork's sibling never attached), else when
        that socket closes (``"closing": true``). Returns the answer
        (``session_id``, ``closed``); an unknown session raises
        :class:`~harnessd.errors.ServerError` with status 404."""
        d = self._call("POST", "/close", {"session_id": session_id})
        if not isinstance(d, dict):
            raise ProtocolError(f"{self.base_url}/close: not an object")
        return d

    def _version(self, d: Any) -> PolicyVersion:
        if not isinstance(d, dict):
            raise ProtocolError(f"{self.base_url}/policy_version: not an object")
        try:
            return PolicyVersion.from_wire(d)
        except ValueError as e:
            raise ProtocolError(f"{self.base_url}/policy_version: {e}") from e


def _check_version(version: int) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(f"a policy version is an integer >= 0, not {version!r}")
