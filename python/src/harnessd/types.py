"""The wire shapes the client reads: observations, events and state.

These mirror the Go types of package ``wire`` (docs/protocol.md is their
reference). Fields the client does not name stay reachable through
:attr:`Observation.metadata` and :attr:`Event.data`, as the server sent
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Event", "Observation", "State", "PolicyVersion", "Sibling"]


@dataclass(frozen=True)
class Event:
    """One event of a turn (``turn_events``): its ``type``, ``data``
    payload, 1-based ``turn``, ``source`` (``harness``, ``bridge``,
    ``gateway``, ``daemon``) and unix ``timestamp``."""

    type: str
    data: dict[str, Any]
    turn: int = 0
    source: str = ""
    timestamp: float = 0.0

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> "Event":
        """Read one event object."""
        data = d.get("data")
        return cls(
            type=str(d.get("type", "")),
            data=data if isinstance(data, dict) else {},
            turn=int(d.get("turn") or 0),
            source=str(d.get("source", "")),
            timestamp=float(d.get("timestamp") or 0.0),
        )


@dataclass(frozen=True)
class Observation:
    """A reset's or step's observation: ``reward`` (None when no rubric
    scored), ``done``, and the daemon's ``metadata`` (episode id, turn
    number, response, turn events, error type, task fields, …)."""

    reward: float | None
    done: bool
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> "Observation":
        """Read an observation frame's data (metadata at the top level, or
        inside ``observation`` for older servers)."""
        md = d.get("metadata")
        if not isinstance(md, dict):
            inner = d.get("observation")
            md = inner.get("metadata") if isinstance(inner, dict) else None
        r = d.get("reward")
        return cls(reward=float(r) if isinstance(r, (int, float)) else None, done=bool(d.get("done")), metadata=md if isinstance(md, dict) else {})

    @property
    def episode_id(self) -> str:
        """The episode's id."""
        return str(self.metadata.get("episode_id", ""))

    @property
    def turn_number(self) -> int:
        """The 1-based turn this observation ends (0 for a reset's)."""
        return int(self.metadata.get("turn_number") or 0)

    @property
    def response(self) -> str | None:
        """The turn's final text (None for a reset's observation)."""
        r = self.metadata.get("response")
        return r if isinstance(r, str) else None

    @property
    def error_type(self) -> str:
        """Why the episode ended abnormally (``startup_failed``,
        ``harness_crashed``, ``turn_timeout``, …), else ``""``."""
        return str(self.metadata.get("error_type", ""))

    @property
    def harness_done(self) -> bool:
        """The harness declared the task complete (``metadata.harness_done``,
        present only when true). A ``done`` observation without it and
        without an ``error_type`` ended at a limit (``max_turns``; its
        ``limits_reached``): a trainer's "truncated", where this is
        "terminated"."""
        return self.metadata.get("harness_done") is True

    @property
    def error(self) -> str:
        """The daemon's account of that failure, else ``""``."""
        return str(self.metadata.get("error", ""))

    @property
    def task_id(self) -> str:
        """The episode's task, with a taskset, else ``""``."""
        return str(self.metadata.get("task_id", ""))

    @property
    def task_instruction(self) -> str:
        """The task's instruction (a reset's observation), else ``""``."""
        return str(self.metadata.get("task_instruction", ""))

    @property
    def fork(self) -> dict[str, Any] | None:
        """Where a forked episode came from (``metadata.fork`` of the
        observation that opened it: a reset with ``at_turn``; a sibling's
        opening observation stays on the daemon, its
        :class:`Sibling` says the same):
        ``parent_session_id``, ``parent_episode_id``, ``at_turn``,
        ``mechanism``, and for a replay ``replayed_calls`` and
        ``replayed_tool_calls``; None for an episode not forked."""
        f = self.metadata.get("fork")
        return f if isinstance(f, dict) else None

    @property
    def events(self) -> list[Event]:
        """The turn's events, in order."""
        evs = self.metadata.get("turn_events")
        return [Event.from_wire(e) for e in evs if isinstance(e, dict)] if isinstance(evs, list) else []


@dataclass(frozen=True)
class State:
    """A session's state (``state`` frame): the current episode, its step
    count, whether it is ``active``, ``done``, a turn is running, the harness
    is alive, the tools it sees, and ``raw`` for everything else."""

    episode_id: str | None
    step_count: int
    active: bool
    done: bool
    turn_running: bool
    harness_alive: bool
    tools: list[str]
    raw: dict[str, Any]

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> "State":
        """Read a state frame's data."""
        eid = d.get("episode_id")
        tools = d.get("tools")
        return cls(
            episode_id=eid if isinstance(eid, str) else None,
            step_count=int(d.get("step_count") or 0),
            active=bool(d.get("active")),
            done=bool(d.get("done")),
            turn_running=bool(d.get("turn_running")),
            harness_alive=bool(d.get("harness_alive")),
            tools=[str(t) for t in tools] if isinstance(tools, list) else [],
            raw=d,
        )


@dataclass(frozen=True)
class PolicyVersion:
    """A daemon's answer to a policy version request (``POST`` or ``GET
    /policy_version``, the ``/ws`` ``policy_version`` frame): the
    ``version`` now in effect for the ``scope`` asked (``"daemon"`` or
    ``"session"``), and for a session its ``session_id`` and
    ``episode_id`` (``""`` when the answer names none)."""

    version: int
    scope: str
    session_id: str = ""
    episode_id: str = ""

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> "PolicyVersion":
        """Read the answer's object."""
        v = d.get("version")
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"a policy version answer without an integer version: {d!r}")
        return cls(version=v, scope=str(d.get("scope", "")), session_id=str(d.get("session_id") or ""), episode_id=str(d.get("episode_id") or ""))


@dataclass(frozen=True)
class Sibling:
    """One sibling of a fork (docs/fork.md): a session of its own on the
    parent's daemon, continuing from the parent's episode after turn
    :attr:`at_turn` — its ``session_id`` (attach to it with
    :meth:`harnessd.AsyncEnv.attach`), its ``episode_id``, and the
    ``mechanism`` that carried the harness's state over (``resume``,
    ``line`` or ``replay``). A sibling that failed has :attr:`error` set
    (the server's reason: its harness did not restore, its replay
    diverged) and no session; the fork's other siblings are unaffected.
    ``parent_session_id``, ``parent_episode_id`` and ``at_turn`` are the
    fork reply's, the same for every sibling of one fork."""

    session_id: str
    episode_id: str
    mechanism: str
    error: str = ""
    parent_session_id: str = ""
    parent_episode_id: str = ""
    at_turn: int = 0

    @property
    def ok(self) -> bool:
        """The sibling is ready: it has a session to attach to."""
        return not self.error and bool(self.session_id)

    @classmethod
    def list_from_wire(cls, d: dict[str, Any]) -> "list[Sibling]":
        """The siblings of a fork reply (``{"parent_session_id",
        "parent_episode_id", "at_turn", "siblings": [...]}``), in order.
        Raises ValueError for a reply without a ``siblings`` list."""
        sibs = d.get("siblings")
        if not isinstance(sibs, list):
            raise ValueError(f"a fork reply without a siblings list: {d!r}")
        at = d.get("at_turn")
        return [
            cls(
                session_id=str(s.get("session_id") or ""),
                episode_id=str(s.get("episode_id") or ""),
                mechanism=str(s.get("mechanism") or ""),
                error=str(s.get("error") or ""),
                parent_session_id=str(d.get("parent_session_id") or ""),
                parent_episode_id=str(d.get("parent_episode_id") or ""),
                at_turn=at if isinstance(at, int) and not isinstance(at, bool) else 0,
            )
            for s in (x if isinstance(x, dict) else {} for x in sibs)
        ]
