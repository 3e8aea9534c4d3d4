"""One environment session over ``/ws``: :class:`AsyncEnv` and its
blocking twin :class:`Env`.

The protocol is OpenEnv's generic one as harnessd serves it
(server/ws.go, docs/protocol.md): one session per connection, one reply
frame per request — ``reset`` → ``observation``, ``step`` →
``observation``, ``state`` → ``state``, ``export`` (harnessd's extension,
docs/gateway.md) → ``export``, ``policy_version`` (the trainer's, docs/
protocol.md "Policy versions") → ``policy_version``, ``fork`` (docs/fork.md)
→ ``fork``, ``close`` ends the session — and an ``error`` frame for a
refused request, which never ends the session. A connection made with a
``session_id`` attaches to an existing session (a fork's sibling, an MCP
session) instead of creating one (``/ws?session_id=``). The client holds no
environment state of its own.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.parse
from collections.abc import Coroutine
from typing import Any, TypeVar

import websockets
import websockets.exceptions

from .errors import AuthenticationError, CapacityError, ProtocolError, SessionError, SiblingFailed, TransportError, server_error
from .http import _check_version, loads, normalize_base_url
from .types import Observation, PolicyVersion, Sibling, State

__all__ = ["AsyncEnv", "Env", "DEFAULT_MAX_FRAME_BYTES", "SAMPLING_FIELDS", "MAX_FORK_COUNT", "FORK_MECHANISMS"]

#: The fields of a reset's ``sampling`` argument (docs/gateway.md,
#: "Sampling fixed by the trainer"): the values pinned for every engine
#: call of the episode, ``allow`` (agent fields let through) and
#: ``strip_stop``.
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "min_p", "seed", "max_tokens", "allow", "strip_stop")

#: The largest frame read from the server (as OpenEnv's client allows).
DEFAULT_MAX_FRAME_BYTES = 100 << 20

#: The most siblings one fork makes (the server's wire.MaxForkCount).
MAX_FORK_COUNT = 64

#: The mechanisms a fork may name (docs/fork.md); "" is the best the
#: harness allows (resume, else line, else replay).
FORK_MECHANISMS = ("resume", "line", "replay")

_WS_MAJOR = int(str(getattr(websockets, "__version__", "10")).split(".")[0])

T = TypeVar("T")


def _is_closed(ws: Any) -> bool:
    """Whether a websockets connection is closing or closed (every version's
    connection has a ``state`` with these names)."""
    state = getattr(ws, "state", None)
    return getattr(state, "name", "") in ("CLOSING", "CLOSED")


def _ws_url(base_url: str, session_id: str | None = None) -> str:
    """The ``/ws`` route of ``base_url``; a base that already ends with it
    (``ws://host/ws``, as the daemon prints its address) is the route."""
    b = normalize_base_url(base_url)
    u = "wss" + b[5:] if b.startswith("https") else "ws" + b[4:]
    if not u.endswith("/ws"):
        u += "/ws"
    return u + "?session_id=" + urllib.parse.quote(session_id, safe="") if session_id else u


def _reset_data(task_id: str | None, task_index: int | None, seed: int | None, episode_id: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    d: dict[str, Any] = dict(extra)
    if task_id is not None:
        d["task_id"] = task_id
    if task_index is not None:
        d["task_index"] = task_index
    if seed is not None:
        d["seed"] = seed
    if episode_id is not None:
        d["episode_id"] = episode_id
    return d


class AsyncEnv:
    """An environment session on the daemon at ``base_url``
    (``http://host:port``).

    ``token`` is sent as ``Authorization: Bearer`` on the upgrade.
    ``open_timeout`` bounds connecting; ``request_timeout`` (None: none)
    bounds each request's reply — a step lasts as long as its turn, up to
    the daemon's ``episode.turn_timeout``. Requests are strictly one at a
    time. Use it as ``async with AsyncEnv(url) as env:`` or call
    :meth:`connect` and :meth:`close`.

    With ``session_id`` the connection attaches to that existing session
    (a fork's sibling, see :meth:`fork` and :meth:`attach`) instead of
    creating one; closing it ends a sibling's session.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        open_timeout: float = 30.0,
        request_timeout: float | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        session_id: str | None = None,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        self.token = token
        self.open_timeout = open_timeout
        self.request_timeout = request_timeout
        self.max_frame_bytes = max_frame_bytes
        self._ws: Any = None
        self._lock = asyncio.Lock()
        #: The id of the episode the last reset started (for an attached
        #: session: its episode, once :meth:`attach` has read its state).
        self.episode_id: str | None = None
        #: The server's id of the session: the one attached to, or the
        #: parent's once a fork has named it (None before).
        self.session_id: str | None = session_id or None
        self._attach = bool(session_id)

    async def __aenter__(self) -> "AsyncEnv":
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the WebSocket (the session); a connection the server has
        closed (a drained daemon) is replaced by a new session. Raises
        :class:`~harnessd.errors.TransportError` when the daemon cannot be
        reached or refuses the upgrade (401 without the right token)."""
        if self._ws is not None:
            if not _is_closed(self._ws):
                return
            self._ws = None  # the server closed it (a drained daemon): a new session
        headers = {"Authorization": "Bearer " + self.token} if self.token else {}
        kw: dict[str, Any] = {"max_size": self.max_frame_bytes, "open_timeout": self.open_timeout, "close_timeout": 5}
        kw["additional_headers" if _WS_MAJOR >= 14 else "extra_headers"] = headers
        url = _ws_url(self.base_url, self.session_id if self._attach else None)
        try:
            self._ws = await websockets.connect(url, **kw)  # type: ignore[attr-defined]
        except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as e:
            # A refused upgrade: InvalidStatusCode.status_code (websockets
            # < 14), InvalidStatus.response.status_code (newer).
            status = getattr(e, "status_code", None) or getattr(getattr(e, "response", None), "status_code", None)
            if status == 401:
                hint = ("the daemon wants an API token: give token=... (or the token as the base URL's password, "
                        "http://user:TOKEN@host)" if not self.token else "the daemon refused this token: check it against the daemon's")
                raise AuthenticationError(f"connect {url}: HTTP 401: {hint}", url=self.base_url, status=401) from e
            why = f"HTTP {status}" if status else str(e)
            raise TransportError(f"connect {url}: {why}", url=self.base_url) from e

    def _closed(self, e: BaseException) -> TransportError:
        code = getattr(e, "code", None)
        reason = getattr(e, "reason", "") or ""
        rcvd = getattr(e, "rcvd", None)  # websockets >= 10: the close frame received
        if rcvd is not None:
            code, reason = rcvd.code, rcvd.reason
        return TransportError(f"{self.base_url}: connection closed: {e}", url=self.base_url, close_code=code, close_reason=reason)

    async def _request(self, typ: str, data: Any, want: str, *, export: bool = False) -> Any:
        if self._ws is None:
            await self.connect()
        frame: dict[str, Any] = {"type": typ}
        if data is not None:
            frame["data"] = data
        text = json.dumps(frame, ensure_ascii=False)
        async with self._lock:
            ws = self._ws
            if ws is None:
                raise TransportError(f"{self.base_url}: the session is closed", url=self.base_url)
            try:
                reply = await self._exchange(ws, text, want)
            except asyncio.CancelledError:
                # The caller gave up (asyncio.wait_for, task.cancel()): the
                # reply may still come and would answer the next request,
                # so the session ends, as after a request_timeout.
                await asyncio.shield(self._abort())
                raise
        try:
            env = loads(reply)
        except ProtocolError as e:
            raise ProtocolError(f"{self.base_url}: {e}") from None
        except (ValueError, TypeError) as e:
            raise ProtocolError(f"{self.base_url}: a frame that is not JSON: {e}") from e
        if not isinstance(env, dict):
            raise ProtocolError(f"{self.base_url}: a frame that is not an object")
        if env.get("type") == "error":
            err = server_error(env.get("data"), export=export)
            if isinstance(err, (CapacityError, SessionError)) and typ != "fork":
                # The server refused the session itself (no free slot, an
                # unknown session to attach, shutting down) and closes the
                # connection: the next request opens a new one.
                await self._abort()
            raise err
        if env.get("type") != want:
            raise ProtocolError(f"{self.base_url}: expected a {want!r} frame, got {env.get('type')!r}")
        return env.get("data")

    async def _exchange(self, ws: Any, text: str, want: str) -> Any:
        """Send one request frame and read its reply. A connection the
        server closed is dropped, so that the next request (or
        :meth:`connect`) opens a new session."""
        try:
            await ws.send(text)
        except websockets.exceptions.ConnectionClosed as e:
            # The server may have refused the session (capacity) and
            # closed before our request: its error frame is still queued.
            try:
                return await asyncio.wait_for(ws.recv(), 1.0)
            except (websockets.exceptions.ConnectionClosed, asyncio.TimeoutError):
                self._drop(ws)
                raise self._closed(e) from e
        try:
            return await asyncio.wait_for(ws.recv(), self.request_timeout)
        except websockets.exceptions.ConnectionClosed as e:
            self._drop(ws)
            raise self._closed(e) from e
        except asyncio.TimeoutError as e:
            # The reply may still come: the session cannot be used
            # for another request, so end it.
            await self._abort()
            raise TransportError(f"{self.base_url}: no {want} reply within {self.request_timeout}s", url=self.base_url) from e
        except OSError as e:
            self._drop(ws)
            raise TransportError(f"{self.base_url}: {e}", url=self.base_url) from e

    def _drop(self, ws: Any) -> None:
        """Forget ws, a connection that is closed, if it is still ours."""
        if self._ws is ws:
            self._ws = None

    async def reset(
        self,
        *,
        task_id: str | None = None,
        task_index: int | None = None,
        seed: int | None = None,
        episode_id: str | None = None,
        sampling: dict[str, Any] | None = None,
        policy_version: int | None = None,
        at_turn: int | None = None,
        **extra: Any,
    ) -> Observation:
        """Start an episode: of task ``task_id`` (or the ``task_index``-th
        task) of the daemon's taskset, with ``seed`` and ``episode_id`` when
        given; ``extra`` keys are sent too (reset keyword arguments). A
        harness that fails to start gives an observation with ``done`` and
        ``error_type == "startup_failed"``, not an exception.

        ``sampling`` pins the sampling of every engine call of the episode,
        overriding the daemon's ``harness.model.sampling`` field by field
        (keys of :data:`SAMPLING_FIELDS`: ``{"temperature": 1.0, "top_p":
        1.0, "seed": 7}``): the engine receives the pinned values whatever
        the agent asked, and the export marks each call ``sampling_pinned``.
        The daemon judges it: an unknown key or a value out of range is a
        :class:`~harnessd.errors.ValidationError` naming ``sampling``, a pin
        on a daemon without an engine upstream an
        :class:`~harnessd.errors.ExecutionError`. ``policy_version`` sets
        the session's policy version before the episode starts (as
        :meth:`set_policy_version` does).

        ``at_turn`` (k >= 1) replaces the session's own episode by one
        continuing after its turn k, as a fork's sibling would (from the
        episode's checkpoints, ``episode.checkpoints: every_turn``, else by
        replay of turns 1..k; docs/fork.md): the observation's
        :attr:`~harnessd.types.Observation.fork` names the old episode, and
        the next step is turn k+1. A k outside the episode's turns is the
        server's :class:`~harnessd.errors.ExecutionError`."""
        if at_turn is not None:
            extra["at_turn"] = at_turn
        if sampling is not None:
            extra["sampling"] = dict(sampling)
        if policy_version is not None:
            _check_version(policy_version)
            extra["policy_version"] = policy_version
        data = await self._request("reset", _reset_data(task_id, task_index, seed, episode_id, extra), "observation")
        obs = Observation.from_wire(data if isinstance(data, dict) else {})
        self.episode_id = obs.episode_id or episode_id
        return obs

    async def step(self, message: str, metadata: dict[str, Any] | None = None) -> Observation:
        """Run one turn with ``message`` (and the action's ``metadata``)."""
        action: dict[str, Any] = {"message": message}
        if metadata is not None:
            action["metadata"] = metadata
        data = await self._request("step", action, "observation")
        return Observation.from_wire(data if isinstance(data, dict) else {})

    async def state(self) -> State:
        """The session's state."""
        data = await self._request("state", None, "state")
        return State.from_wire(data if isinstance(data, dict) else {})

    async def export(self, episode_id: str | None = None) -> dict[str, Any]:
        """The training export (``harnessd.gateway.export/v1``) of this
        session's current or last episode, or of ``episode_id``, through the
        ``/ws`` ``export`` frame. An episode without training traffic raises
        :class:`~harnessd.errors.ExportUnavailable` with the server's
        reason."""
        data = await self._request("export", {"episode_id": episode_id} if episode_id else None, "export", export=True)
        if not isinstance(data, dict):
            raise ProtocolError(f"{self.base_url}: an export that is not an object")
        return data

    async def set_policy_version(self, version: int, scope: str = "session") -> PolicyVersion:
        """Set the policy version (an integer >= 0) through the ``/ws``
        ``policy_version`` frame: of this connection's session (``scope``
        ``"session"``) or of the whole daemon (``"daemon"``). Whichever of a
        session's and its daemon's versions was set last stamps the
        session's model calls. The connection handles one frame at a time,
        so this waits for a running step: to change the version *during* a
        turn use :meth:`~harnessd.http.DaemonHTTP.set_policy_version` (or
        :meth:`~harnessd.pool.Pool.set_policy_version`)."""
        _check_version(version)
        if scope not in ("session", "daemon"):
            raise ValueError(f"scope is 'session' or 'daemon', not {scope!r}")
        data: dict[str, Any] = {"version": version}
        if scope == "daemon":
            data["scope"] = "daemon"
        return self._policy_version(await self._request("policy_version", data, "policy_version"))

    async def policy_version(self, scope: str = "session") -> PolicyVersion:
        """Read the policy version: this session's effective one
        (``"session"``) or the daemon's (``"daemon"``)."""
        if scope not in ("session", "daemon"):
            raise ValueError(f"scope is 'session' or 'daemon', not {scope!r}")
        return self._policy_version(await self._request("policy_version", {"scope": "daemon"} if scope == "daemon" else None, "policy_version"))

    def _policy_version(self, data: Any) -> PolicyVersion:
        if not isinstance(data, dict):
            raise ProtocolError(f"{self.base_url}: a policy_version frame that is not an object")
        try:
            return PolicyVersion.from_wire(data)
        except ValueError as e:
            raise ProtocolError(f"{self.base_url}: {e}") from e

    async def fork(self, count: int, at_turn: int = 0, mechanism: str = "") -> list[Sibling]:
        """Fork this session's live episode, between turns, into ``count``
        siblings (1 to :data:`MAX_FORK_COUNT`), each a session of its own on
        this daemon continuing from the episode's state after turn
        ``at_turn`` (0: the current one; an earlier one needs
        ``episode.checkpoints`` or a replay) by ``mechanism`` (one of
        :data:`FORK_MECHANISMS`, ``""``: the best the harness allows). This
        session goes on unchanged. Returns the siblings in order; attach
        to each with :meth:`attach_sibling` (or :meth:`attach`), and close
        it when done (one never attached holds its slot until the daemon's
        idle timeout, or :meth:`~harnessd.http.DaemonHTTP.close_session`).

        A refused fork raises the server's error, and no sibling is made:
        a bad ``count``, an ``at_turn`` past the current turn or an unknown
        ``mechanism`` :class:`~harnessd.errors.ValidationError` (naming the
        field); a turn running on the session
        :class:`~harnessd.errors.BusyError`; fewer free session slots than
        ``count`` :class:`~harnessd.errors.CapacityError`; no live episode,
        or an episode that cannot be forked (``fork unavailable: …``)
        :class:`~harnessd.errors.ExecutionError`. A sibling that failed on
        its own is not an exception: its :attr:`~harnessd.types.Sibling.
        error` says why."""
        data: dict[str, Any] = {"count": count}
        if at_turn:
            data["at_turn"] = at_turn
        if mechanism:
            data["mechanism"] = mechanism
        reply = await self._request("fork", data, "fork")
        if not isinstance(reply, dict):
            raise ProtocolError(f"{self.base_url}: a fork reply that is not an object")
        try:
            sibs = Sibling.list_from_wire(reply)
        except ValueError as e:
            raise ProtocolError(f"{self.base_url}: {e}") from e
        if sibs and sibs[0].parent_session_id:
            self.session_id = sibs[0].parent_session_id
        return sibs

    @classmethod
    async def attach(cls, base_url: str, session_id: str, **options: Any) -> "AsyncEnv":
        """A connected :class:`AsyncEnv` attached to the existing session
        ``session_id`` of the daemon at ``base_url`` (a fork's sibling, or
        a session made over ``/mcp``): ``/ws?session_id=``, with
        ``options`` as :class:`AsyncEnv` takes them. The attachment is
        confirmed with a state request, which sets :attr:`episode_id`; an
        unknown session, or one already attached, raises the server's
        :class:`~harnessd.errors.SessionError`. Closing the returned env
        (a close frame) ends a sibling's session."""
        env = cls(base_url, session_id=session_id, **options)
        await env._confirm_attach()
        return env

    async def _confirm_attach(self) -> None:
        try:
            st = await self.state()
        except BaseException:
            await self._abort()
            raise
        self.episode_id = st.episode_id

    def _options(self) -> dict[str, Any]:
        return {"token": self.token, "open_timeout": self.open_timeout, "request_timeout": self.request_timeout, "max_frame_bytes": self.max_frame_bytes}

    async def attach_sibling(self, sibling: Sibling) -> "AsyncEnv":
        """:meth:`attach` to ``sibling``'s session on this daemon, with this
        env's options (token, timeouts). A sibling that failed raises
        :class:`~harnessd.errors.SiblingFailed` with its reason."""
        if not sibling.ok:
            raise SiblingFailed(sibling)
        return await type(self).attach(self.base_url, sibling.session_id, **self._options())

    async def _abort(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                await ws.close()
            except Exception:  # noqa: BLE001 - already failing
                pass

    async def close(self) -> None:
        """End the session (a ``close`` frame, then the socket). Closing a
        connection the server already closed is not an error."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            await ws.send('{"type":"close"}')
        except websockets.exceptions.ConnectionClosed:
            pass
        try:
            await ws.close()
        except (OSError, websockets.exceptions.WebSocketException):
            pass


class Env:
    """The blocking twin of :class:`AsyncEnv`, for scripts and trainers
    without an event loop: the same methods, each waiting for its reply. It
    runs the connection on an event loop in a thread of its own, stopped by
    :meth:`close`. Use it as ``with Env(url) as env:``.
    """

    def __init__(self, base_url: str, **options: Any) -> None:
        self._options = dict(options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="harnessd-env", daemon=True)
        self._thread.start()
        try:
            self._env: AsyncEnv = self._run(self._make(base_url, options))
        except BaseException:
            self._stop_loop()
            raise

    async def _make(self, base_url: str, options: dict[str, Any]) -> AsyncEnv:
        return AsyncEnv(base_url, **options)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coro.close()
            raise TransportError("the Env is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> "Env":
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """The daemon's base URL."""
        return self._env.base_url

    @property
    def episode_id(self) -> str | None:
        """The id of the episode the last reset started."""
        return self._env.episode_id

    @property
    def session_id(self) -> str | None:
        """See :attr:`AsyncEnv.session_id`."""
        return self._env.session_id

    @classmethod
    def attach(cls, base_url: str, session_id: str, **options: Any) -> "Env":
        """See :meth:`AsyncEnv.attach`: a connected :class:`Env` attached
        to session ``session_id``."""
        env = cls(base_url, session_id=session_id, **options)
        try:
            env._run(env._env._confirm_attach())
        except BaseException:
            env.close()
            raise
        return env

    def attach_sibling(self, sibling: Sibling) -> "Env":
        """See :meth:`AsyncEnv.attach_sibling`."""
        if not sibling.ok:
            raise SiblingFailed(sibling)
        opts = {k: v for k, v in self._options.items() if k != "session_id"}
        return type(self).attach(self.base_url, sibling.session_id, **opts)

    def fork(self, count: int, at_turn: int = 0, mechanism: str = "") -> list[Sibling]:
        """See :meth:`AsyncEnv.fork`."""
        return self._run(self._env.fork(count, at_turn, mechanism))

    def connect(self) -> None:
        """See :meth:`AsyncEnv.connect`."""
        self._run(self._env.connect())

    def reset(self, **kw: Any) -> Observation:
        """See :meth:`AsyncEnv.reset` (``sampling``, ``policy_version`` and
        the rest as keyword arguments)."""
        return self._run(self._env.reset(**kw))

    def step(self, message: str, metadata: dict[str, Any] | None = None) -> Observation:
        """See :meth:`AsyncEnv.step`."""
        return self._run(self._env.step(message, metadata))

    def state(self) -> State:
        """See :meth:`AsyncEnv.state`."""
        return self._run(self._env.state())

    def export(self, episode_id: str | None = None) -> dict[str, Any]:
        """See :meth:`AsyncEnv.export`."""
        return self._run(self._env.export(episode_id))

    def set_policy_version(self, version: int, scope: str = "session") -> PolicyVersion:
        """See :meth:`AsyncEnv.set_policy_version`."""
        return self._run(self._env.set_policy_version(version, scope))

    def policy_version(self, scope: str = "session") -> PolicyVersion:
        """See :meth:`AsyncEnv.policy_version`."""
        return self._run(self._env.policy_version(scope))

    def close(self) -> None:
        """End the session and stop the connection's thread."""
        if self._loop.is_closed():
            return
        try:
            self._run(self._env.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

