"""Episodes and group rollouts over a :class:`~harnessd.pool.Pool`.

:func:`run_episode` plays one episode on a session: reset, then one step
per message the *policy* gives, until the episode is done, the policy
returns None, or ``max_turns``; then it fetches the training export.
:func:`rollout_group` plays G episodes of one task (GRPO's group) spread
over the pool's daemons, each retried elsewhere when its daemon fails, and
returns their trajectories, rewards and exports.

A group is started by a :class:`GroupStrategy`: :class:`ResetGroup` — G
independent resets of the same task and seed, the default — or
:class:`ForkGroup` — one episode played for a prefix of turns, then forked
G ways (docs/fork.md), each sibling played to its end, so the G episodes
share the prefix (its state, its files, and its model calls' tokens in the
exports) exactly.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from .env import AsyncEnv
from .errors import ExportUnavailable, HarnessdError, SiblingFailed
from .http import DaemonHTTP
from .pool import AttemptFailure, Pool
from .types import Observation, Sibling

__all__ = [
    "Policy",
    "Turn",
    "Trajectory",
    "EpisodeResult",
    "GroupResult",
    "GroupSpec",
    "GroupStrategy",
    "ResetGroup",
    "ForkGroup",
    "PrefixEnded",
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
    observation and its turns.

    A fork's sibling (:class:`ForkGroup`) starts with its parent's
    history: ``reset`` and the first ``forked_at`` turns are the parent's
    (episode ``parent_episode_id``), the turns after them the sibling's
    own, and ``mechanism`` says how its harness took the parent's state
    over. For an episode not forked ``forked_at`` is 0 and the other two
    are ``""``."""

    episode_id: str
    daemon: str
    task: str | None
    reset: Observation
    turns: list[Turn] = field(default_factory=list)
    parent_episode_id: str = ""
    forked_at: int = 0
    mechanism: str = ""

    @property
    def own_turns(self) -> list[Turn]:
        """The turns this episode played itself (all of them for one not
        forked; a sibling's after the parent's ``forked_at``)."""
        return self.turns[self.forked_at:]

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
    """Starts and plays a group's episodes on a pool: :class:`ResetGroup`,
    :class:`ForkGroup`."""

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


class PrefixEnded(HarnessdError):
    """A :class:`ForkGroup`'s prefix did not reach its fork: the parent
    episode ended (``done``: the harness finished, a limit, a failure) or
    the policy stopped before ``prefix_turns`` turns. :attr:`trajectory`
    is the parent's as far as it went. Every episode of the group fails
    with it (there is no live episode to fork)."""

    def __init__(self, message: str, trajectory: Trajectory) -> None:
        super().__init__(message)
        self.trajectory = trajectory


class ForkGroup:
    """G episodes from one: an episode is reset (``spec.task``, ``seed``,
    ``reset_kwargs``; id ``{group_id}-prefix``), played for
    ``prefix_turns`` turns — by the group's policy, or with ``messages``
    when given — and forked G ways (:meth:`~harnessd.AsyncEnv.fork`, by
    ``mechanism``, ``""`` for the best the harness allows). Each sibling is
    attached and played by the policy to its end, concurrently, and its
    training export fetched; the parent's session is closed once forked.

    A sibling's :class:`Trajectory` starts with the parent's reset and
    prefix turns (``forked_at`` of them, so a policy indexing by
    ``len(traj.turns)`` goes on where the prefix stopped, and
    ``max_turns`` counts them as :class:`ResetGroup` does) and its export
    holds the parent's calls as its prefix, marked ``inherited`` (see
    :func:`harnessd.convert.samples_from_export`'s ``inherited``). The
    exports' rewards include the prefix turns' (the sibling's history
    holds them).

    The whole group runs on one daemon, the pool's choice among those
    with G + 1 free slots (the parent and its siblings, counted as the
    pool's until the group ends). The prefix is retried on another daemon
    per the pool's :class:`~harnessd.pool.RetryPolicy` when its daemon
    fails before the fork (each result's ``attempts`` lists those
    failures); once forked, a sibling that failed — the fork reported it
    failed (:class:`~harnessd.errors.SiblingFailed` with the server's
    reason), its attachment, a step or its connection failed (the
    :class:`~harnessd.errors.HarnessdError`) — is an
    :class:`EpisodeResult` with that ``error`` and no trajectory, and the
    others are kept. A prefix that ends before the fork fails every
    episode with :class:`PrefixEnded`; a refused fork (an episode that
    cannot fork, a mechanism its harness lacks) every episode with the
    server's error. A fork refused for want of slots (another client took
    them; :class:`~harnessd.errors.CapacityError`) is not a failed
    attempt: as for any full daemon, the pool waits for room and the
    prefix is played again. An
    error that is not the daemon's (a policy's bug) ends the whole group,
    its sessions closed, as in :class:`ResetGroup`.

    ``fork_seconds`` is the last group's fork (the request to its reply),
    for benchmarks.
    """

    def __init__(self, prefix_turns: int | None = None, *, messages: Sequence[str] | None = None, mechanism: str = "") -> None:
        if messages is not None:
            messages = list(messages)
            if prefix_turns is None:
                prefix_turns = len(messages)
            elif prefix_turns != len(messages):
                raise ValueError(f"prefix_turns {prefix_turns} but {len(messages)} prefix messages")
        if prefix_turns is None or prefix_turns < 0:
            raise ValueError("a ForkGroup needs prefix_turns >= 0 (or the prefix's messages)")
        self.prefix_turns = prefix_turns
        self.messages = messages
        self.mechanism = mechanism
        self.fork_seconds: float | None = None

    async def _prefix(self, env: AsyncEnv, spec: GroupSpec, eid: str) -> Trajectory:
        obs = await env.reset(task_id=spec.task, seed=spec.seed, episode_id=eid, **(spec.reset_kwargs or {}))
        traj = Trajectory(episode_id=obs.episode_id or eid, daemon=env.base_url, task=spec.task, reset=obs)
        while len(traj.turns) < self.prefix_turns and not obs.done:
            k = len(traj.turns)
            msg = self.messages[k] if self.messages is not None else await _call_policy(spec.policy, obs, traj)
            if msg is None:
                break
            obs = await env.step(msg)
            traj.turns.append(Turn(msg, obs))
        if len(traj.turns) < self.prefix_turns or obs.done:
            why = f"ended ({obs.error_type or 'done'})" if obs.done else "was stopped by the policy"
            raise PrefixEnded(f"the prefix episode {traj.episode_id} {why} after {len(traj.turns)} of {self.prefix_turns} turns: nothing to fork", traj)
        return traj

    async def _sibling(self, pool: Pool, spec: GroupSpec, prefix: Trajectory, sib: Sibling, i: int, attempts: list[AttemptFailure],
                       unattached: set[str]) -> EpisodeResult:
        res = EpisodeResult(index=i, attempts=list(attempts))
        if not sib.ok:
            res.error = SiblingFailed(sib)
            return res
        env: AsyncEnv | None = None
        try:
            env = await AsyncEnv.attach(prefix.daemon, sib.session_id, token=pool.token, **pool.env_options)
            # From here its connection's close ends the sibling's session.
            unattached.discard(sib.session_id)
            traj = Trajectory(episode_id=sib.episode_id or (env.episode_id or ""), daemon=prefix.daemon, task=spec.task, reset=prefix.reset,
                              turns=list(prefix.turns), parent_episode_id=prefix.episode_id, forked_at=len(prefix.turns), mechanism=sib.mechanism)
            obs = prefix.last
            while not obs.done and (spec.max_turns is None or len(traj.turns) < spec.max_turns):
                msg = await _call_policy(spec.policy, obs, traj)
                if msg is None:
                    break
                obs = await env.step(msg)
                traj.turns.append(Turn(msg, obs))
            if spec.export:
                try:
                    res.export = await env.export(traj.episode_id or None)
                except ExportUnavailable as e:
                    res.export_error = e
            res.trajectory = traj
        except HarnessdError as e:
            res.attempts.append(AttemptFailure(prefix.daemon, e))
            res.error = e
            res.export = None
        finally:
            if env is not None:
                await env.close()
        return res

    @staticmethod
    async def _close_unattached(pool: Pool, url: str, ids: set[str]) -> None:
        http = DaemonHTTP(url, token=pool.token, timeout=pool.health_timeout)

        async def one(sid: str) -> None:
            try:
                await asyncio.to_thread(http.close_session, sid)
            except HarnessdError:
                pass  # gone already, or its daemon is: nothing to end

        await asyncio.gather(*(one(sid) for sid in sorted(ids)))

    async def __call__(self, pool: Pool, spec: GroupSpec) -> list[EpisodeResult]:
        """See :class:`GroupStrategy`."""
        attempts: list[AttemptFailure] = []

        async def play(env: AsyncEnv) -> list[EpisodeResult]:
            eid = f"{spec.group_id}-prefix" + (f"-r{len(attempts)}" if attempts else "")
            prefix = await self._prefix(env, spec, eid)
            t0 = time.monotonic()
            sibs = await env.fork(spec.size, mechanism=self.mechanism)
            self.fork_seconds = time.monotonic() - t0
            # The parent has served its purpose: its slot is free for others.
            await env.close()
            unattached = {s.session_id for s in sibs if s.ok}
            try:
                if len(sibs) != spec.size:
                    raise HarnessdError(f"a fork of {spec.size} answered {len(sibs)} siblings")
                done = list(attempts)
                tasks = [asyncio.ensure_future(self._sibling(pool, spec, prefix, s, i, done, unattached)) for i, s in enumerate(sibs)]
                try:
                    return list(await asyncio.gather(*tasks))
                except BaseException:
                    for t in tasks:
                        t.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise
            finally:
                if unattached:
                    # Siblings no connection took over (the group failed, an
                    # attachment failed): end them now rather than leave
                    # their slots to the daemon's idle timeout.
                    await asyncio.shield(self._close_unattached(pool, env.base_url, unattached))

        failing: tuple[type[BaseException], ...] = (HarnessdError, *pool.retry.retry_on)
        try:
            return await pool.run(play, on_failure=attempts.append, slots=spec.size + 1)
        except failing as e:
            # The prefix failed every attempt, ended early, or the fork was
            # refused (the server's error: an episode that cannot fork, a
            # mechanism its harness lacks): every episode fails with it.
            return [EpisodeResult(index=i, attempts=list(attempts), error=e) for i in range(spec.size)]
