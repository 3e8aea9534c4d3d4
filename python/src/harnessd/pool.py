"""A pool of sessions over many daemons.

:class:`Pool` opens each session on the daemon with the most free capacity
(``max_sessions`` minus what ``/health`` reported held by others, minus the
pool's own open sessions there), keeps away from daemons that are down or
draining, retries infrastructure failures (:class:`~harnessd.errors.
InfrastructureError`: a daemon unreachable, gone mid-episode, full, shutting
down) on another daemon per a :class:`RetryPolicy`, and bounds how many
sessions run at once. The daemons come from a :class:`Provider`: a fixed
list of base URLs (:class:`StaticProvider`), or anything that hands them out
(a cluster's claims).

:meth:`Pool.set_policy_version` sets the trainer's policy version on every
daemon (``POST /policy_version``), and on each daemon the provider adds
later.

The pool owns only its bookkeeping (which daemon holds how many of its
sessions, which are down, the policy version it set); sessions are
:class:`~harnessd.env.AsyncEnv`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from .env import AsyncEnv
from .errors import CapacityError, HarnessdError, InfrastructureError
from .http import DaemonHTTP, Health, _check_version, normalize_base_url
from .types import PolicyVersion

__all__ = ["Provider", "StaticProvider", "RetryPolicy", "Daemon", "Pool", "NoDaemonAvailable", "AttemptFailure", "PolicyVersionNotSet"]

T = TypeVar("T")


@runtime_checkable
class Provider(Protocol):
    """Where a :class:`Pool`'s daemons come from. :meth:`daemons` is asked
    at every refresh, so the list may change (daemons added, drained,
    replaced)."""

    async def daemons(self) -> Sequence[str]:
        """The base URLs of the daemons to use now."""
        ...


class StaticProvider:
    """A fixed list of base URLs."""

    def __init__(self, urls: Sequence[str]) -> None:
        if not urls:
            raise ValueError("a pool needs at least one daemon")
        self._urls = [normalize_base_url(u) for u in urls]

    async def daemons(self) -> Sequence[str]:
        """The list given."""
        return list(self._urls)


@dataclass(frozen=True)
class RetryPolicy:
    """How a :class:`Pool` retries an episode whose daemon failed.

    ``max_attempts`` counts the first try. Between attempts the pool waits
    ``backoff`` seconds, times ``backoff_factor`` after each failure, at
    most ``max_backoff``. ``retry_on`` are the exception types retried
    (:class:`~harnessd.errors.InfrastructureError` by default: never the
    episode's own errors). A daemon that failed is kept out of new sessions
    for ``down_for`` seconds, then probed again.
    """

    max_attempts: int = 3
    backoff: float = 0.05
    backoff_factor: float = 2.0
    max_backoff: float = 2.0
    retry_on: tuple[type[BaseException], ...] = (InfrastructureError,)
    down_for: float = 5.0

    def delay(self, failures: int) -> float:
        """The wait before the attempt after ``failures`` failures."""
        return min(self.max_backoff, self.backoff * (self.backoff_factor ** max(0, failures - 1)))


class NoDaemonAvailable(InfrastructureError):
    """No daemon of the pool is up with free capacity within the wait."""


class PolicyVersionNotSet(InfrastructureError):
    """:meth:`Pool.set_policy_version` could not set the version on every
    daemon: :attr:`failed` maps each daemon's URL to its error,
    :attr:`done` each daemon that took it to its answer. The daemons that
    failed are kept out of new sessions (their calls would be stamped with
    an older version)."""

    def __init__(self, message: str, *, failed: dict[str, BaseException], done: dict[str, PolicyVersion]) -> None:
        super().__init__(message)
        self.failed = failed
        self.done = done


@dataclass(frozen=True)
class AttemptFailure:
    """One failed attempt of a pooled run: the daemon and the error."""

    daemon: str
    error: BaseException


@dataclass
class Daemon:
    """The pool's view of one daemon."""

    url: str
    #: The last /health answer (None before the first, or when it failed).
    health: Health | None = None
    #: The pool's sessions open there now.
    ours: int = 0
    #: Sessions held there by other clients when last probed.
    foreign: int = 0
    #: Until when (time.monotonic) the daemon is kept out after a failure.
    down_until: float = 0.0
    #: Why it was last marked down.
    down_reason: str = ""
    #: Sessions the pool opened there, and how many of them failed.
    opened: int = 0
    failed: int = 0

    def free(self, now: float) -> int:
        """Sessions the pool may still open there."""
        if self.health is None or self.health.draining or now < self.down_until:
            return 0
        return max(0, self.health.max_sessions - self.foreign - self.ours)


class Pool:
    """Sessions over many daemons.

    ``daemons`` is a list of base URLs or a :class:`Provider`. ``token`` is
    the daemons' API token. ``max_concurrency`` bounds the sessions open at
    once (default: no bound but the daemons' capacity). ``retry`` is the
    :class:`RetryPolicy`. ``wait_timeout`` bounds the wait for a daemon
    with free capacity. ``env_options`` go to every
    :class:`~harnessd.env.AsyncEnv` (``request_timeout``, …).

    Use :meth:`run` to run a coroutine on a session with retries, or
    :meth:`session` for one session without them. Call :meth:`refresh` (or
    let the first session do it) before use; ``async with Pool(...)``
    refreshes on entry. A pool belongs to the event loop that first uses
    it.
    """

    def __init__(
        self,
        daemons: Sequence[str] | Provider,
        *,
        token: str | None = None,
        max_concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        wait_timeout: float = 60.0,
        health_timeout: float = 5.0,
        env_options: dict[str, Any] | None = None,
    ) -> None:
        self.provider: Provider = daemons if isinstance(daemons, Provider) else StaticProvider(list(daemons))
        self.token = token
        self.retry = retry or RetryPolicy()
        self.wait_timeout = wait_timeout
        self.health_timeout = health_timeout
        self.env_options = dict(env_options or {})
        self._sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._daemons: dict[str, Daemon] = {}
        self._cond: asyncio.Condition | None = None
        self._refreshing: asyncio.Task[None] | None = None
        self._refreshed = False
        #: Sessions a daemon refused as full (CAPACITY_REACHED) and the
        #: pool opened again once there was room.
        self.capacity_refusals = 0
        #: The policy version :meth:`set_policy_version` last set (None:
        #: never), given to each daemon the provider adds.
        self.policy_version: int | None = None

    async def __aenter__(self) -> "Pool":
        await self.refresh()
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    @property
    def daemons(self) -> list[Daemon]:
        """The pool's view of its daemons."""
        return list(self._daemons.values())

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    async def _probe(self, d: Daemon) -> None:
        http = DaemonHTTP(d.url, token=self.token, timeout=self.health_timeout)
        ours_then = d.ours
        try:
            h = await asyncio.to_thread(http.health)
        except HarnessdError as e:
            d.health = None
            d.down_until = time.monotonic() + self.retry.down_for
            d.down_reason = f"health: {e}"
            return
        d.health = h
        d.foreign = max(0, h.active_sessions - ours_then)
        if h.draining:
            d.down_reason = "draining"
        elif time.monotonic() >= d.down_until:
            d.down_reason = ""

    async def refresh(self) -> None:
        """Ask the provider for the daemons and probe each one's /health
        (concurrently). A daemon the provider no longer lists is dropped
        once the pool holds no session there."""
        urls = [normalize_base_url(u) for u in await self.provider.daemons()]
        added = [u for u in urls if u not in self._daemons]
        for u in urls:
            self._daemons.setdefault(u, Daemon(u))
        for u in list(self._daemons):
            if u not in urls and self._daemons[u].ours == 0:
                del self._daemons[u]
        now = time.monotonic()
        # A daemon marked down after a failure is probed only once its
        # down time has passed: it must not take work again at once.
        await asyncio.gather(*(self._probe(d) for d in self._daemons.values() if now >= d.down_until))
        if self.policy_version is not None and added:
            # A daemon joining after set_policy_version gets the version
            # before it takes a session; one that refuses stays out.
            v = self.policy_version
            for url, r in await asyncio.gather(*(self._set_version(u, v) for u in added if self._daemons[u].health is not None)):
                if isinstance(r, BaseException):
                    self.mark_down(url, f"policy_version: {r}")
        self._refreshed = True
        cond = self._condition()
        async with cond:
            cond.notify_all()

    def mark_down(self, url: str, reason: str) -> None:
        """Keep daemon ``url`` out of new sessions for the policy's
        ``down_for`` seconds."""
        d = self._daemons.get(normalize_base_url(url))
        if d is not None:
            d.down_until = time.monotonic() + self.retry.down_for
            d.down_reason = reason

    def _pick(self, avoid: set[str], need: int = 1) -> Daemon | None:
        now = time.monotonic()
        best: Daemon | None = None
        for d in self._daemons.values():
            f = d.free(now)
            if f < need:
                continue
            # Prefer a daemon the current run has not failed on, then the
            # most free capacity; ties go to the fewest of our sessions.
            key = (d.url not in avoid, f, -d.ours)
            if best is None or key > (best.url not in avoid, best.free(now), -best.ours):
                best = d
        return best

    async def _acquire(self, avoid: set[str], need: int = 1) -> Daemon:
        if not self._refreshed:
            await self.refresh()
        if need > 1 and self._daemons and all(d.health is not None and d.health.max_sessions < need for d in self._daemons.values()):
            # No daemon could ever hold them: say so now, not after the wait.
            raise NoDaemonAvailable(
                f"no daemon has {need} session slots: " + "; ".join(f"{d.url}: max_sessions {d.health.max_sessions if d.health else '?'}" for d in self._daemons.values()))
        cond = self._condition()
        deadline = time.monotonic() + self.wait_timeout
        while True:
            async with cond:
                d = self._pick(avoid, need)
                if d is not None:
                    d.ours += need
                    d.opened += 1
                    return d
                left = deadline - time.monotonic()
                if left <= 0:
                    room = "free capacity" if need == 1 else f"{need} free session slots"
                    raise NoDaemonAvailable(
                        "no daemon with %s within %.1fs: %s"
                        % (room, self.wait_timeout, "; ".join(f"{x.url}: {x.down_reason or 'full'}" for x in self._daemons.values()))
                    )
                # Wait for one of the pool's sessions to end; failing
                # that, re-probe (daemons that were down may be back,
                # others' sessions may have ended).
                try:
                    await asyncio.wait_for(cond.wait(), min(left, 0.5))
                    continue
                except asyncio.TimeoutError:
                    pass
            await self.refresh()

    async def _release(self, d: Daemon, n: int = 1) -> None:
        d.ours -= n
        cond = self._condition()
        async with cond:
            cond.notify_all()

    @asynccontextmanager
    async def session(self, *, avoid: set[str] | None = None, slots: int = 1) -> AsyncIterator[AsyncEnv]:
        """One connected session on the daemon with the most free capacity
        (avoiding ``avoid`` when another will do), closed on exit. No
        retries: an :class:`~harnessd.errors.InfrastructureError` marks the
        daemon down and propagates. ``slots`` > 1 asks for a daemon with
        that many free session slots and counts them all as the pool's
        until exit: room for the session and for sessions it makes there
        (a fork's siblings). It counts as one session of
        ``max_concurrency``."""
        if slots < 1:
            raise ValueError("a session takes at least one slot")
        if self._sem is not None:
            await self._sem.acquire()
        try:
            d = await self._acquire(avoid or set(), slots)
            env = AsyncEnv(d.url, token=self.token, **self.env_options)
            try:
                await env.connect()
                yield env
            except CapacityError as e:
                # Full (others' sessions, or one of ours the daemon has not
                # freed yet): not down, but no room until it says so.
                active = e.active_sessions if e.active_sessions is not None else (d.health.max_sessions if d.health else 0)
                d.foreign = max(d.foreign, active - (d.ours - slots))
                raise
            except InfrastructureError as e:
                d.failed += 1
                self.mark_down(d.url, str(e))
                raise
            finally:
                try:
                    await env.close()
                finally:
                    await self._release(d, slots)
        finally:
            if self._sem is not None:
                self._sem.release()

    async def run(self, fn: Callable[[AsyncEnv], Awaitable[T]], *, on_failure: Callable[[AttemptFailure], None] | None = None, slots: int = 1) -> T:
        """Run ``fn(env)`` on a pooled session; when it raises one of the
        policy's ``retry_on`` errors, run it again on a fresh session
        (another daemon when one has room), up to ``max_attempts`` times.
        ``fn`` is called with a new session each attempt, so it must start
        its episode itself (reset). ``on_failure`` hears each failed
        attempt. ``slots`` is :meth:`session`'s (room kept on the daemon
        for a fork's siblings). A session the daemon refused as full
        (:class:`~harnessd.errors.CapacityError`) before ``fn`` could start
        an episode is not an attempt: the pool waits for room (up to
        ``wait_timeout``) and opens another. The last error propagates."""
        failures: list[AttemptFailure] = []
        avoid: set[str] = set()
        deadline = time.monotonic() + self.wait_timeout
        while True:
            url = ""
            try:
                async with self.session(avoid=avoid, slots=slots) as env:
                    url = env.base_url
                    return await fn(env)
            except CapacityError:
                # Refused before the episode began: not a failed attempt.
                # Wait for room (re-probing) until wait_timeout.
                if not issubclass(CapacityError, self.retry.retry_on) or time.monotonic() > deadline:
                    raise
                self.capacity_refusals += 1
                await asyncio.sleep(self.retry.backoff)
                await self.refresh()
                continue
            except self.retry.retry_on as e:
                url = url or getattr(e, "url", "")  # a connection that failed: the daemon it was to
                f = AttemptFailure(url, e)
                failures.append(f)
                if url:
                    avoid.add(url)
                if on_failure is not None:
                    on_failure(f)
                if len(failures) >= self.retry.max_attempts:
                    raise
                await asyncio.sleep(self.retry.delay(len(failures)))

    async def _set_version(self, url: str, version: int) -> tuple[str, PolicyVersion | BaseException]:
        http = DaemonHTTP(url, token=self.token, timeout=self.health_timeout)
        try:
            return url, await asyncio.to_thread(http.set_policy_version, version)
        except HarnessdError as e:
            return url, e

    async def set_policy_version(self, version: int) -> dict[str, PolicyVersion]:
        """Set the daemon-wide policy version ``version`` (an integer >= 0)
        on every daemon the provider lists now, concurrently, over HTTP
        (``POST /policy_version``), and remember it for daemons the provider
        adds later. Returns each daemon's answer by URL. A session's own
        version (a reset's ``policy_version``, :meth:`~harnessd.env.
        AsyncEnv.set_policy_version`) set before this is overridden: the
        last set applies. Raises :class:`PolicyVersionNotSet` when a daemon
        did not take it (after trying all of them); those daemons are kept
        out of new sessions for the retry policy's ``down_for``. A daemon
        that restarts at the same URL starts again at version 0: set the
        version again after a restart."""
        _check_version(version)
        urls = [normalize_base_url(u) for u in await self.provider.daemons()]
        for u in urls:
            self._daemons.setdefault(u, Daemon(u))
        self.policy_version = version
        done: dict[str, PolicyVersion] = {}
        failed: dict[str, BaseException] = {}
        for url, r in await asyncio.gather(*(self._set_version(u, version) for u in urls)):
            if isinstance(r, PolicyVersion):
                done[url] = r
            else:
                failed[url] = r
                self.mark_down(url, f"policy_version: {r}")
        if failed:
            raise PolicyVersionNotSet(
                f"policy version {version} not set on {len(failed)} of {len(urls)} daemons: "
                + "; ".join(f"{u}: {e}" for u, e in failed.items()),
                failed=failed, done=done)
        return done

    def status(self) -> list[dict[str, Any]]:
        """Each daemon's view: url, free, ours, foreign, max, down reason,
        sessions opened and failed."""
        now = time.monotonic()
        return [
            {
                "url": d.url,
                "free": d.free(now),
                "ours": d.ours,
                "foreign": d.foreign,
                "max_sessions": d.health.max_sessions if d.health else None,
                "down": d.down_reason if (now < d.down_until or d.health is None or d.health.draining) else "",
                "opened": d.opened,
                "failed": d.failed,
            }
            for d in self._daemons.values()
        ]

