"""Pool and rollout_group over several real daemons."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

import harnessd
from harnessd import convert
from harnessd.rollout import Trajectory


def policy(obs: harnessd.Observation, traj: Trajectory) -> str | None:
    """Three turns: two model calls, then an answer that the rubric scores
    1.0 in the episodes of even index and 0.0 in the others."""
    n = len(traj.turns)
    if n == 0:
        return "llm what is 2+3"
    if n == 1:
        return "llm are you sure"
    if n == 2:
        index = episode_index(traj.episode_id)
        return "reply 5" if index % 2 == 0 else "reply four"
    return None


def episode_index(episode_id: str) -> int:
    """i of a group's episode id, {group}-{i} or {group}-{i}-r{attempt}."""
    parts = episode_id.split("-")
    if parts[-1].startswith("r"):
        parts.pop()
    return int(parts[-1])


def gateway_ids(traj: Trajectory) -> dict[int, list[int]]:
    """call_index -> the engine's prompt + completion ids, rebuilt from
    the gateway's llm_response events of the trajectory (their prompt ids
    are deltas from the parent call's: harnessd.full_calls)."""
    calls = harnessd.full_calls(e for t in traj.turns for e in t.observation.events)
    return {ci: list(c["response"]["prompt_token_ids"]) + list(c["response"]["completion_token_ids"])
            for ci, c in calls.items() if "response" in c}


def check_samples_equal_exports(group: harnessd.GroupResult) -> list[convert.Sample]:
    samples = convert.samples_from_group(group)
    by_ep = {e.trajectory.episode_id: e for e in group.episodes if e.trajectory}
    assert len(samples) == sum(len(e.export["chains"]) for e in group.episodes if e.export)
    for s in samples:
        ep = by_ep[s.episode_id]
        chain = next(c for c in ep.export["chains"] if c["id"] == s.chain_id)
        # The sample's ids are the export's, unchanged...
        assert s.prompt_ids + s.completion_ids == chain["input_ids"]
        assert s.prompt_ids == chain["input_ids"][: chain["prompt_length"]]
        assert s.loss_mask == chain["loss_mask"][chain["prompt_length"]:]
        assert [lp for lp, m in zip(s.logprobs, s.loss_mask) if m] == [lp for lp in chain["logprobs"][chain["prompt_length"]:] if lp is not None]
        # ...and the engine's: the chain's last call's prompt + completion
        # as the gateway saw the engine answer them.
        assert s.input_ids == gateway_ids(ep.trajectory)[s.calls[-1]]
        assert s.reward == sum(r["reward"] for r in ep.export["rewards"])
    return samples


def test_group_rollout_of_8_over_4_daemons(daemons) -> None:
    ds = [daemons.start(max_sessions=2) for _ in range(4)]

    async def go() -> harnessd.GroupResult:
        async with harnessd.Pool([d.url for d in ds]) as pool:
            return await harnessd.rollout_group(pool, None, 8, policy, group_id="grp")

    g = asyncio.run(go())
    assert len(g.episodes) == 8 and not g.failed
    assert all(not e.attempts for e in g.episodes)
    # Spread by free capacity: two sessions on each daemon.
    assert Counter(e.trajectory.daemon for e in g.episodes) == Counter({d.url: 2 for d in ds})
    assert g.rewards == [1.0, 0.0] * 4
    for e in g.episodes:
        assert e.export is not None and e.export["episode_id"] == e.trajectory.episode_id
        # Two model calls, the second extending the first: one chain.
        assert len(e.export["chains"]) == 1 and e.export["chains"][0]["calls"] == [1, 2]
    samples = check_samples_equal_exports(g)
    assert [s.index for s in samples] == list(range(8))


def test_daemon_killed_mid_rollout_fails_only_its_episodes(daemons) -> None:
    ds = [daemons.start(max_sessions=2) for _ in range(4)]
    victim = ds[1]
    arrived = 0
    killed = asyncio.Event()

    async def killing_policy(obs: harnessd.Observation, traj: Trajectory) -> str | None:
        # Once every first attempt has played its first turn, kill one
        # daemon: its two episodes are mid-episode then, no other is.
        nonlocal arrived
        if len(traj.turns) == 1 and "-r" not in traj.episode_id:
            arrived += 1
            if arrived == 8:
                victim.kill()
                killed.set()
            await killed.wait()
        return policy(obs, traj)

    async def go() -> harnessd.GroupResult:
        retry = harnessd.RetryPolicy(max_attempts=3, backoff=0.01, down_for=60)
        async with harnessd.Pool([d.url for d in ds], retry=retry, wait_timeout=60) as pool:
            return await harnessd.rollout_group(pool, None, 8, killing_policy, group_id="kill")

    g = asyncio.run(go())
    assert killed.is_set()
    retried = [e for e in g.episodes if e.attempts]
    # Only the victim's two episodes failed, once each, on the victim...
    assert len(retried) == 2
    for e in retried:
        assert [a.daemon for a in e.attempts] == [victim.url]
        assert isinstance(e.attempts[0].error, harnessd.TransportError)
        # ...and were played again, whole, elsewhere.
        assert e.ok and e.trajectory.daemon != victim.url
        assert e.trajectory.episode_id.endswith("-r1") and len(e.trajectory.turns) == 3
    # Every other episode ran once, undisturbed.
    for e in g.episodes:
        if not e.attempts:
            assert e.trajectory.daemon != victim.url and e.trajectory.episode_id == f"kill-{e.index}"
    assert not g.failed and g.rewards == [1.0, 0.0] * 4
    check_samples_equal_exports(g)


def test_pool_keeps_away_from_down_and_full_daemons(daemons) -> None:
    live = daemons.start(max_sessions=4)
    full = daemons.start(max_sessions=1)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    holder = harnessd.Env(full.url)  # another client fills "full"
    try:
        holder.reset(episode_id="foreign")

        async def go() -> tuple[harnessd.GroupResult, list[dict]]:
            async with harnessd.Pool([dead, full.url, live.url]) as pool:
                st = pool.status()
                g = await harnessd.rollout_group(pool, None, 4, policy, group_id="hl")
                return g, st

        g, st = asyncio.run(go())
    finally:
        holder.close()
    by = {x["url"]: x for x in st}
    assert by[dead]["free"] == 0 and by[dead]["down"].startswith("health")
    assert by[full.url]["free"] == 0 and by[full.url]["foreign"] == 1
    assert by[live.url]["free"] == 4
    assert not g.failed and {e.trajectory.daemon for e in g.episodes} == {live.url}
    assert all(not e.attempts for e in g.episodes)


def test_bounded_concurrency(daemons) -> None:
    ds = [daemons.start(max_sessions=4) for _ in range(2)]
    running = 0
    peak = 0
    three = asyncio.Event()

    async def counting(obs: harnessd.Observation, traj: Trajectory) -> str | None:
        # The first three episodes hold their sessions until all three
        # run: a pool that let more through would show a higher peak.
        nonlocal running, peak
        if not traj.turns:
            running += 1
            peak = max(peak, running)
            if running >= 3:
                three.set()
            await asyncio.wait_for(three.wait(), 10)
        msg = policy(obs, traj)
        if msg is None:
            running -= 1
        return msg

    async def go() -> harnessd.GroupResult:
        async with harnessd.Pool([d.url for d in ds], max_concurrency=3) as pool:
            return await harnessd.rollout_group(pool, None, 8, counting)

    g = asyncio.run(go())
    assert not g.failed and peak == 3


def test_retries_run_out(daemons) -> None:
    d = daemons.start(max_sessions=2)

    async def crashing(obs: harnessd.Observation, traj: Trajectory) -> str | None:
        if traj.turns:
            return None
        # Every attempt's daemon dies under it: the last error is reported.
        d.kill()
        return "llm hi"

    async def go() -> harnessd.GroupResult:
        retry = harnessd.RetryPolicy(max_attempts=2, backoff=0.01, down_for=0.01)
        async with harnessd.Pool([d.url], retry=retry, wait_timeout=1) as pool:
            return await harnessd.rollout_group(pool, None, 1, crashing)

    g = asyncio.run(go())
    assert len(g.failed) == 1
    e = g.failed[0]
    assert isinstance(e.error, harnessd.InfrastructureError) and e.trajectory is None
    assert len(e.attempts) == 2


def test_a_full_daemon_is_waited_for_not_failed(daemons) -> None:
    d = daemons.start(max_sessions=1)

    async def go() -> tuple[harnessd.GroupResult, int]:
        async with harnessd.Pool([d.url], wait_timeout=30) as pool:
            # The pool saw room; another client takes it before the pool's
            # reset, and gives it back once the pool has been refused.
            other = harnessd.AsyncEnv(d.url)
            await other.reset(episode_id="other")

            async def release() -> None:
                while pool.capacity_refusals == 0:
                    await asyncio.sleep(0.01)
                await other.close()

            rel = asyncio.ensure_future(release())
            g = await harnessd.rollout_group(pool, None, 1, policy, group_id="full")
            await rel
            return g, pool.capacity_refusals

    g, refusals = asyncio.run(go())
    assert refusals >= 1
    assert not g.failed and g.episodes[0].attempts == [] and g.episodes[0].trajectory.episode_id == "full-0"


class SwitchingProvider:
    """A provider whose list changes: first only a daemon that is gone,
    then the live one too (a cluster handing out a new daemon)."""

    def __init__(self, dead: str, live: str) -> None:
        self.dead, self.live, self.calls = dead, live, 0

    async def daemons(self) -> list[str]:
        self.calls += 1
        return [self.dead] if self.calls == 1 else [self.dead, self.live]


def test_provider_list_changes(daemons) -> None:
    live = daemons.start(max_sessions=2)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    prov = SwitchingProvider(dead, live.url)
    assert isinstance(prov, harnessd.Provider)

    async def go() -> harnessd.GroupResult:
        async with harnessd.Pool(prov, wait_timeout=30) as pool:
            assert [d.url for d in pool.daemons] == [dead]
            return await harnessd.rollout_group(pool, None, 2, policy)

    g = asyncio.run(go())
    # The first refresh found no room; a later one found the new daemon.
    assert prov.calls >= 2 and not g.failed
    assert {e.trajectory.daemon for e in g.episodes} == {live.url}


TASKS = [
    {"id": "five", "instruction": "What is 2+3?", "grader": "true", "metadata": {"kind": "arith"}},
    {"id": "six", "instruction": "What is 2+4?", "grader": "false"},
]


def test_group_of_a_task(daemons) -> None:
    # Daemons serving a taskset: a group is G resets of one task; the
    # task's grader scores each episode's end.
    ds = [daemons.start(max_sessions=2, tasks=TASKS) for _ in range(2)]

    def solve(obs: harnessd.Observation, traj: Trajectory) -> str | None:
        if not traj.turns:
            assert traj.reset.task_id == traj.task and traj.reset.task_instruction
            return "llm " + traj.reset.task_instruction
        return "done" if len(traj.turns) == 1 else None

    async def go() -> list[harnessd.GroupResult]:
        async with harnessd.Pool([d.url for d in ds]) as pool:
            return [await harnessd.rollout_group(pool, t, 4, solve, seed=3) for t in ("five", "six")]

    five, six = asyncio.run(go())
    for g, want in ((five, 1.0), (six, 0.0)):
        assert not g.failed and g.rewards == [want] * 4
        for e in g.episodes:
            assert e.trajectory.done and e.trajectory.last.task_id == g.task
            assert e.trajectory.last.metadata["grade"]["reward"] == want
    assert five.episodes[0].trajectory.reset.metadata["task_metadata"] == {"kind": "arith"}
    samples = convert.samples_from_group(five, reward="final")
    assert {s.group for s in samples} == {"five"} and [s.reward for s in samples] == [1.0] * 4
    sky = convert.to_skyrl(samples)
    assert [t.to_string() for t in sky["trajectory_ids"]] == [f"five_{i}" for i in range(4)]


def test_a_draining_daemon_gets_no_new_sessions(daemons) -> None:
    import signal
    import threading
    import time

    a, b = daemons.start(max_sessions=4), daemons.start(max_sessions=4)
    busy = harnessd.Env(a.url)
    busy.reset(episode_id="busy")
    marker = a.dir / "go-on"
    outcome: list[object] = []

    def run_turn() -> None:
        try:
            outcome.append(busy.step(f"waitfor {marker}"))
        except harnessd.HarnessdError as e:  # the drain may end the session
            outcome.append(e)

    turn = threading.Thread(target=run_turn)
    turn.start()
    try:
        deadline = time.monotonic() + 30
        while not harnessd.DaemonHTTP(a.url).health().raw.get("active_sessions"):
            assert time.monotonic() < deadline, "the busy session never showed"
            time.sleep(0.01)
        a.proc.send_signal(signal.SIGTERM)  # drain: the running turn may finish
        deadline = time.monotonic() + 30
        while not harnessd.DaemonHTTP(a.url).health().draining:
            assert time.monotonic() < deadline, "the daemon never said it drains"
            time.sleep(0.01)

        async def go() -> tuple[harnessd.GroupResult, list[dict]]:
            async with harnessd.Pool([a.url, b.url]) as pool:
                st = pool.status()
                return await harnessd.rollout_group(pool, None, 4, policy), st

        g, st = asyncio.run(go())
    finally:
        marker.write_text("")
        turn.join(30)
        try:
            busy.close()
        except harnessd.HarnessdError:
            pass
    assert {x["url"]: x["down"] for x in st}[a.url] == "draining", st
    assert not g.failed, [(e.error, e.attempts) for e in g.failed]
    assert {e.trajectory.daemon for e in g.episodes} == {b.url}, (st, [e.attempts for e in g.episodes])
