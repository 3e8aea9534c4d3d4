"""Typed exceptions of the harnessd client.

Every error a daemon answers (an ``error`` frame on ``/ws``, an HTTP error
body) becomes a :class:`ServerError` subclass chosen by its ``code`` and
carrying the server's own ``message``; failures of the connection itself are
:class:`TransportError`. :class:`InfrastructureError` marks the failures a
:class:`~harnessd.pool.Pool` retries on another daemon: the daemon was
unreachable, went away, was full or was shutting down — never the episode's
own outcome (a harness that crashed is an observation with ``error_type``,
not an exception).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HarnessdError",
    "InfrastructureError",
    "TransportError",
    "AuthenticationError",
    "ServerError",
    "InvalidJSONError",
    "UnknownTypeError",
    "ValidationError",
    "ExecutionError",
    "CapacityError",
    "FactoryError",
    "SessionError",
    "BusyError",
    "ExportUnavailable",
    "SiblingFailed",
    "ProtocolError",
    "server_error",
]


class HarnessdError(Exception):
    """Base class of every error raised by this package."""


class InfrastructureError(HarnessdError):
    """A failure of the daemon or the path to it, not of the episode.

    A :class:`~harnessd.pool.Pool` retries the episode elsewhere, per its
    :class:`~harnessd.pool.RetryPolicy`.
    """


class TransportError(InfrastructureError):
    """The connection failed: refused, reset, closed, or timed out.

    ``url`` is the daemon's base URL; ``close_code`` and ``close_reason`` are
    the WebSocket close frame's, when the server sent one.
    """

    def __init__(self, message: str, *, url: str = "", close_code: int | None = None, close_reason: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.close_code = close_code
        self.close_reason = close_reason


class AuthenticationError(HarnessdError):
    """The daemon refused the connection's credentials (HTTP 401, or 403):
    no API token given where it wants one, or another token than its own.
    Not an :class:`InfrastructureError`: another attempt with the same
    token fails the same way, so a :class:`~harnessd.pool.Pool` does not
    retry it. ``url`` is the daemon's base URL, ``status`` the HTTP status."""

    def __init__(self, message: str, *, url: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class SiblingFailed(HarnessdError):
    """A fork's sibling that failed on its own (its harness did not
    restore, its replay diverged, …): the fork itself succeeded and its
    other siblings are unaffected. :attr:`sibling` is the fork reply's
    entry (a :class:`~harnessd.types.Sibling`), its ``error`` the server's
    reason, which is this exception's message too."""

    def __init__(self, sibling: Any) -> None:
        super().__init__("sibling failed: " + (getattr(sibling, "error", "") or "no session"))
        self.sibling = sibling


class ProtocolError(HarnessdError):
    """The server answered something this client cannot read (a frame of
    the wrong type, JSON that is not an object)."""


class ServerError(HarnessdError):
    """An error the server answered: its ``code`` (``VALIDATION_ERROR``,
    ``EXECUTION_ERROR``, …), its ``message`` verbatim, and the whole error
    ``data`` (for fields such as ``errors`` or ``max_sessions``)."""

    code: str = ""

    def __init__(self, message: str, *, code: str = "", data: dict[str, Any] | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.data: dict[str, Any] = dict(data or {})
        #: The HTTP status, for an error answered over HTTP.
        self.status = status

    def __str__(self) -> str:
        return f"{self.message} (code: {self.code})" if self.code else self.message


class InvalidJSONError(ServerError):
    """``INVALID_JSON``: the frame was not JSON."""

    code = "INVALID_JSON"


class UnknownTypeError(ServerError):
    """``UNKNOWN_TYPE``: the frame's type is not one the server serves."""

    code = "UNKNOWN_TYPE"


class ValidationError(ServerError):
    """``VALIDATION_ERROR``: a field was refused; :attr:`errors` are the
    pydantic-style field errors (``type``, ``loc``, ``msg``, ``input``)."""

    code = "VALIDATION_ERROR"

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The server's field errors (empty when it gave none)."""
        errs = self.data.get("errors")
        return list(errs) if isinstance(errs, list) else []

    def __str__(self) -> str:
        # The message is "Invalid message" for every refused field: say
        # which field and why ("episode_id: String should not contain ...").
        fields = []
        for e in self.errors:
            if isinstance(e, dict) and e.get("msg"):
                loc = ".".join(str(p) for p in e.get("loc") or [])
                fields.append(f"{loc}: {e['msg']}" if loc else str(e["msg"]))
        base = super().__str__()
        return f"{base}: {'; '.join(fields)}" if fields else base


class ExecutionError(ServerError):
    """``EXECUTION_ERROR``: the operation failed (a step with no episode, a
    step while a turn runs, …)."""

    code = "EXECUTION_ERROR"


class ExportUnavailable(ExecutionError):
    """The episode has no training export. :attr:`reason` is the server's
    reason code: ``no_model_gateway``, ``evaluation_traffic`` or
    ``no_training_calls`` (empty for another cause, such as an unknown
    episode)."""

    def __init__(self, message: str, *, reason: str = "", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.reason = reason


class CapacityError(ServerError, InfrastructureError):
    """``CAPACITY_REACHED``: the daemon is full (:attr:`active_sessions` of
    :attr:`max_sessions`). For a fork: the daemon has not the free session
    slots for every sibling asked for, and made none (a fork reserves all
    its slots or none)."""

    code = "CAPACITY_REACHED"

    @property
    def active_sessions(self) -> int | None:
        """Sessions running when the daemon refused."""
        v = self.data.get("active_sessions")
        return v if isinstance(v, int) else None

    @property
    def max_sessions(self) -> int | None:
        """The daemon's session limit."""
        v = self.data.get("max_sessions")
        return v if isinstance(v, int) else None


class FactoryError(ServerError, InfrastructureError):
    """``FACTORY_ERROR``: the daemon could not create the environment."""

    code = "FACTORY_ERROR"


class SessionError(ServerError, InfrastructureError):
    """``SESSION_ERROR``: the session cannot go on (the server is shutting
    down, an unknown or already attached session)."""

    code = "SESSION_ERROR"


class BusyError(ExecutionError):
    """``BUSY``: a reset, a step or a fork asked for while a turn (or a
    reset) runs on the session. The running turn is not disturbed; ask
    again once it has ended. (Over one ``/ws`` connection frames are
    handled one at a time, so this comes when the session is also driven
    from elsewhere: HTTP, another connection.) It is an
    :class:`ExecutionError`, which a busy reset or step was before it had
    a code of its own."""

    code = "BUSY"


_BY_CODE: dict[str, type[ServerError]] = {
    c.code: c
    for c in (InvalidJSONError, UnknownTypeError, ValidationError, ExecutionError, CapacityError, FactoryError, SessionError, BusyError)
}

_EXPORT_REASONS = ("no_model_gateway", "evaluation_traffic", "no_training_calls")


def server_error(data: Any, *, status: int | None = None, export: bool = False) -> ServerError:
    """The exception for an error frame's ``data`` (or an HTTP error body
    ``{"detail": …}``). With ``export`` an ``EXECUTION_ERROR`` becomes
    :class:`ExportUnavailable`, its reason parsed from the message."""
    if not isinstance(data, dict):
        return ServerError(str(data), status=status)
    c = data.get("code")
    code: str = c if isinstance(c, str) else ""
    msg = data.get("message")
    if not isinstance(msg, str):
        detail = data.get("detail")
        msg = detail if isinstance(detail, str) else str(detail if detail is not None else data)
    if export and (code in ("", "EXECUTION_ERROR")):
        r = data.get("reason")
        reason: str = r if isinstance(r, str) else ""
        if not reason:
            head = msg.split(":", 1)[0]
            reason = head if head in _EXPORT_REASONS else ""
        return ExportUnavailable(msg, reason=reason, code="EXECUTION_ERROR", data=data, status=status)
    cls = _BY_CODE.get(code, ServerError)
    return cls(msg, code=code, data=data, status=status)
