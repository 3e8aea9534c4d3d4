"""Episodes and group rollouts over a :class:`~harnessd.pool.Pool`.

:func:`run_episode` plays one episode on a session: reset, then one step
per message the *policy* gives, until the episode is done, the policy
returns None, or ``max_turns``; then it fetches the training export.
:func:`rollout_group` plays G episodes of one task (GRPO's group) spread
over the pool's daemons, each retried elsewhere when its daemon fails, and
returns their trajectories, rewards and exports.

A group is started by a :class:`GroupStrategy`. :class:`ResetGroup` — G
independent resets of the same task and seed — is the one there is today;
forking a live episode G ways (issue 24) will be another strategy behind
the same call, once the daemon serves it.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from .env import AsyncEnv
from .errors import ExportUnavailable
from .pool import AttemptFailure, Pool
from .types import Observation

__all__ = [
    "Policy",
    "Turn",
    "Trajectory",
    "EpisodeResult",
    "GroupResult",
    "GroupSpec",
    "GroupStrategy",
    "ResetGroup",
    "run_episode",
    "rollout_group",
    "rollout_group_sync",
]

#: A policy gives each turn's message from the last observation and the
#: trajectory so far (sync or async); None ends the episode.
Policy = Callable[["Observation", "Trajectory"], Union[str, None, Awaitable[Union[str, None]]]]


@dataclass(frozen=True)
class Turn:
    """One step: the message sent and the observation it gave."""

    message: str
    observation: Observation


@dataclass
class Trajectory:
    """An episode as the client saw it: where it ran, its reset
    observation and its turns."""

    episode_id: str
    daemon: str
    task: str | None
    reset: Observation
    turns: list[Turn] = field(default_factory=list)

    @property
    def last(self) -> Observation:
        """The latest observation (the reset's before any step)."""
        return self.turns[-1].observation if self.turns else self.reset

    @property
    def done(self) -> bool:
        """The episode ended (the harness said so, a limit, a failure)."""
        return self.last.done

    @property
    def reward(self) -> float | None:
        """The last observation's reward (None when no rubric scored)."""
        return self.last.reward

    @property
    def rewards(self) -> list[float | None]:
        """Each turn's reward, in order."""
        return [t.observation.reward for t in self.turns]

    @property
    def error_type(self) -> str:
        """The episode's failure (``harness_crashed``, …), else ``""``."""
        return self.last.error_type


@dataclass
class EpisodeResult:
    """One episode of a group: its trajectory and training export (or why
    it has none), the failed attempts before it, and ``error`` when every
    attempt failed (then ``trajectory`` is None)."""

    index: int
    trajectory: Trajectory | None = None
    export: dict[str, Any] | None = None
    export_error: ExportUnavailable | None = None
    attempts: list[AttemptFailure] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        """The episode ran to its end on some daemon."""
        return self.trajectory is not None

    @property
    def reward(self) -> float | None:
        """The episode's final reward."""
        return self.trajectory.reward if self.trajectory else None


@dataclass
class GroupResult:
    """G episodes of one task."""

    task: str | None
    group_id: str
    episodes: list[EpisodeResult]

    @property
    def trajectories(self) -> list[Trajectory | None]:
        """Each episode's trajectory (None for one that failed every attempt)."""
        return [e.trajectory for e in self.episodes]

    @property
    def rewards(self) -> list[float | None]:
        """Each episode's final reward."""
        return [e.reward for e in self.episodes]

    @property
    def exports(self) -> list[dict[str, Any] | None]:
        """Each episode's training export."""
        return [e.export for e in self.episodes]

    @property
    def failed(self) -> list[EpisodeResult]:
        """The episodes that failed every attempt."""
        return [e for e in self.episodes if not e.ok]


async def _call_policy(policy: Policy, obs: Observation, traj: Trajectory) -> str | None:
    msg = policy(obs, traj)
    if inspect.isawaitable(msg):
        msg = await msg
    if msg is not None and not isinstance(msg, str):
        raise TypeError(f"the policy returned {type(msg).__name__}, not a str or None")
    return msg


async def run_episode(
    env: AsyncEnv,
    policy: Policy,
    *,
    task: str | None = None,
    seed: int | None = None,
    episode_id: str | None = None,
    max_turns: int | None = None,
    export: bool = True,
    reset_kwargs: dict[str, Any] | None = None,
) -> tuple[Trajectory, dict[str, Any] | None, ExportUnavailable | None]:
    """Play one episode on ``env``: reset (``task``, ``seed``,
    ``episode_id``, ``reset_kwargs``), then step with each message
    ``policy`` gives until the episode is done, the policy returns None, or
    ``max_turns`` steps. With ``export`` the training export is fetched
    (``/ws`` export frame) before the session ends; an episode without one
    gives the server's :class:`~harnessd.errors.ExportUnavailable` instead.
    Returns ``(trajectory, export, export_error)``."""
    obs = await env.reset(task_id=task, seed=seed, episode_id=episode_id, **(reset_kwargs or {}))
    traj = Trajectory(episode_id=obs.episode_id or (episode_id or ""), daemon=env.base_url, task=task, reset=obs)
    while not obs.done and (max_turns is None or len(traj.turns) < max_turns):
        msg = await _call_policy(policy, obs, traj)
        if msg is None:
            break
        obs = await env.step(msg)
        traj.turns.append(Turn(msg, obs))
    ex: dict[str, Any] | None = None
    why: ExportUnavailable | None = None
    if export:
        try:
            ex = await env.export(traj.episode_id or None)
        except ExportUnavailable as e:
            why = e
    return traj, ex, why


@dataclass(frozen=True)
class GroupSpec:
    """What a :class:`GroupStrategy` plays: ``size`` episodes of ``task``
    with ``seed``, each through ``policy``, ids ``{group_id}-{i}`` (a
    retry adds ``-r{attempt}``)."""

    task: str | None
    size: int
    policy: Policy
    group_id: str
    seed: int | None = None
    max_turns: int | None = None
    export: bool = True
    reset_kwargs: dict[str, Any] | None = None


class GroupStrategy(Protocol):
    """Starts and plays a group's episodes on a pool. The hook through
    which fork-based groups (one episode forked G ways) will come."""

    async def __call__(self, pool: Pool, spec: GroupSpec) -> list[EpisodeResult]:
        """Play ``spec.size`` episodes; one result each, in index order."""
        ...


class ResetGroup:
    """G independent episodes: G resets of the same task and seed, run
    concurrently (bounded by the pool), each retried on another daemon per
    the pool's :class:`~harnessd.pool.RetryPolicy`. An episode that fails
    every attempt is reported with its ``error``; the others are kept."""

    async def _one(self, pool: Pool, spec: GroupSpec, i: int) -> EpisodeResult:
        res = EpisodeResult(index=i)

        async def play(env: AsyncEnv) -> tuple[Trajectory, dict[str, Any] | None, ExportUnavailable | None]:
            eid = f"{spec.group_id}-{i}" + (f"-r{len(res.attempts)}" if res.attempts else "")
            return await run_episode(
                env, spec.policy, task=spec.task, seed=spec.seed, episode_id=eid,
                max_turns=spec.max_turns, export=spec.export, reset_kwargs=spec.reset_kwargs,
            )

        try:
            res.trajectory, res.export, res.export_error = await pool.run(play, on_failure=res.attempts.append)
        except pool.retry.retry_on as e:
            res.error = e
        return res

    async def __call__(self, pool: Pool, spec: GroupSpec) -> list[EpisodeResult]:
        """See :class:`GroupStrategy`. An error that is not retried (a
        policy's bug) ends the whole group: the other episodes are cancelled
        and their sessions closed before it propagates."""
        tasks = [asyncio.ensure_future(self._one(pool, spec, i)) for i in range(spec.size)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


async def rollout_group(
    pool: Pool,
    task: str | None,
    G: int,
    policy: Policy,
    *,
    seed: int | None = None,
    max_turns: int | None = None,
    group_id: str | None = None,
    export: bool = True,
    reset_kwargs: dict[str, Any] | None = None,
    strategy: GroupStrategy | None = None,
) -> GroupResult:
    """Play ``G`` episodes of ``task`` (a task id of the daemons' taskset,
    or None for a daemon without one) with ``policy``, over ``pool``.

    Episodes are spread over the daemons by free capacity; an episode whose
    daemon fails (:class:`~harnessd.errors.InfrastructureError`) is played
    again from its reset on another, per the pool's retry policy, while the
    others go on. Returns a :class:`GroupResult` whose episodes are in index
    order, each with its trajectory, reward, training export and failed
    attempts. ``strategy`` defaults to :class:`ResetGroup`.
    """
    if G < 1:
        raise ValueError("a group has at least one episode")
    spec = GroupSpec(
        task=task, size=G, policy=policy, group_id=group_id or "g-" + uuid.uuid4().hex[:12], seed=seed,
        max_turns=max_turns, export=export, reset_kwargs=reset_kwargs,
    )
    episodes = await (strategy or ResetGroup())(pool, spec)
    return GroupResult(task=task, group_id=spec.group_id, episodes=episodes)


def rollout_group_sync(daemons: Sequence[str], task: str | None, G: int, policy: Policy, *, pool_options: dict[str, Any] | None = None, **kw: Any) -> GroupResult:
    """:func:`rollout_group` for code without an event loop: builds a
    :class:`~harnessd.pool.Pool` over ``daemons`` (with ``pool_options``)
    and runs the group to its end."""

    async def go() -> GroupResult:
        async with Pool(daemons, **(pool_options or {})) as pool:
            return await rollout_group(pool, task, G, policy, **kw)

    return asyncio.run(go())

