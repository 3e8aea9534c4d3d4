"""Forks of a live episode (docs/fork.md, issue 24) through the client,
against real daemons: AsyncEnv/Env.fork and attach, reset(at_turn=), the
refusals as typed errors, and ForkGroup behind rollout_group with the
exports' shared prefix as the converters read it."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import harnessd
from harnessd import convert, errors


def _text(obs: harnessd.Observation) -> str:
    assert obs.response is not None, obs.metadata
    return obs.response


def test_fork_x4_carries_memory_and_files_and_isolates_writes(daemons) -> None:
    """After two turns (one remembering a string, one writing a file), a
    fork ×4 by the line protocol and one ×4 by replay: each sibling's next
    turn sees the remembered string and the file; the siblings' writes are
    their own; the parent goes on unchanged, its turns counting on."""
    d = daemons.start(max_sessions=9)

    async def go() -> None:
        async with harnessd.AsyncEnv(d.url) as parent:
            await parent.reset(episode_id="fk-parent")
            assert _text(await parent.step("remember alpha-7")) == "remembered: alpha-7"
            assert _text(await parent.step("write notes.txt from-the-parent")) == "wrote notes.txt"
            for at, mech, want in ((2, "", "line"), (3, "replay", "replay")):
                sibs = await parent.fork(4, mechanism=mech)
                assert parent.session_id and all(s.parent_session_id == parent.session_id for s in sibs)
                assert [s.ok for s in sibs] == [True] * 4, sibs
                assert {s.mechanism for s in sibs} == {want}
                assert all(s.parent_episode_id == "fk-parent" and s.at_turn == at for s in sibs), sibs
                assert len({s.session_id for s in sibs} | {parent.session_id}) == 5
                assert len({s.episode_id for s in sibs} | {"fk-parent"}) == 5
                envs = [await parent.attach_sibling(s) for s in sibs]
                try:
                    for s, e in zip(sibs, envs):
                        assert e.session_id == s.session_id and e.episode_id == s.episode_id
                        obs = await e.step("recall;;cat notes.txt;;count")
                        assert obs.turn_number == at + 1, obs.metadata
                        assert _text(obs).splitlines() == ["recall: alpha-7", "notes.txt: from-the-parent", f"turns: {at + 1}"]
                    # Each writes its own; each reads back only its own.
                    await asyncio.gather(*(e.step(f"write notes.txt sibling-{i};;remember beta-{i}") for i, e in enumerate(envs)))
                    for i, e in enumerate(envs):
                        assert _text(await e.step("cat notes.txt;;recall")).splitlines() == [f"notes.txt: sibling-{i}", f"recall: beta-{i}"]
                finally:
                    for e in envs:
                        await e.close()
                # The parent is untouched by its siblings.
                assert _text(await parent.step("cat notes.txt;;recall")).splitlines() == ["notes.txt: from-the-parent", "recall: alpha-7"]
            st = await parent.state()
            assert st.episode_id == "fk-parent" and st.step_count == 4 and st.active

    asyncio.run(go())
    # The siblings' sessions ended with their connections' close frames.
    _wait_sessions(d.url, 0)


def _wait_sessions(url: str, n: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        h = harnessd.DaemonHTTP(url).health()
        if h.active_sessions == n:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{h.active_sessions} sessions open, want {n}")
        time.sleep(0.05)


def test_sync_env_fork_attach_and_reset_at_turn(daemons) -> None:
    """Env's blocking twins: fork, attach by URL and session id, and a
    reset at an earlier turn (from the episode's checkpoints) giving back
    that turn's files and memory."""
    d = daemons.start(max_sessions=3, config="episode:\n  checkpoints: every_turn\n")
    with harnessd.Env(d.url) as env:
        env.reset(episode_id="fk-sync")
        env.step("write f.txt one;;remember one")
        env.step("write f.txt two;;remember two")
        env.step("write f.txt three;;remember three")
        # A fork at turn 1 from its checkpoint: the state of then.
        (s,) = env.fork(1, at_turn=1)
        assert s.ok and s.at_turn == 1, s
        with harnessd.Env.attach(d.url, s.session_id) as sib:
            assert sib.episode_id == s.episode_id and sib.session_id == s.session_id
            obs = sib.step("cat f.txt;;recall")
            assert obs.turn_number == 2 and _text(obs).splitlines() == ["f.txt: one", "recall: one"]
        # Attaching to a session that does not exist (the sibling's has
        # ended with its close) is the server's SESSION_ERROR.
        with pytest.raises(errors.SessionError) as ei:
            harnessd.Env.attach(d.url, s.session_id)
        assert "Unknown session_id" in ei.value.message
        # A failed sibling cannot be attached.
        with pytest.raises(errors.SiblingFailed) as fi:
            env.attach_sibling(harnessd.Sibling(session_id="", episode_id="", mechanism="replay", error="replay diverged at turn 1: x"))
        assert "replay diverged" in str(fi.value)
        # A sibling never attached is ended over POST /close.
        (u,) = env.fork(1)
        http = harnessd.DaemonHTTP(d.url)
        assert http.health().active_sessions == 2
        assert http.close_session(u.session_id) == {"session_id": u.session_id, "closed": True}
        assert http.health().active_sessions == 1
        with pytest.raises(errors.ServerError) as ci:
            http.close_session(u.session_id)
        assert ci.value.status == 404
        # The session's own episode back to after turn 2.
        obs = env.reset(at_turn=2)
        assert obs.fork is not None and obs.fork["parent_episode_id"] == "fk-sync" and obs.fork["at_turn"] == 2, obs.metadata
        obs = env.step("cat f.txt;;recall;;count")
        assert obs.turn_number == 3 and _text(obs).splitlines() == ["f.txt: two", "recall: two", "turns: 3"]
        with pytest.raises(errors.ExecutionError) as xi:
            env.reset(at_turn=9)
        assert "at_turn 9" in xi.value.message


def test_fork_refusals_are_typed_errors(daemons, tmp_path: Path) -> None:
    """Each refusal as the server's code maps it — a bad count, at_turn or
    mechanism VALIDATION_ERROR (ValidationError naming the field), no
    episode EXECUTION_ERROR, no room for every sibling CAPACITY_REACHED
    (CapacityError; none made), a turn running BUSY (BusyError, over /ws and
    over POST /fork) — and after each the session steps on."""
    d = daemons.start(max_sessions=3)
    http = harnessd.DaemonHTTP(d.url)
    with harnessd.Env(d.url) as env:
        with pytest.raises(errors.ExecutionError) as ei:
            env.fork(2)
        assert "reset first" in ei.value.message
        env.reset(episode_id="fk-refused")
        env.step("reply one")
        for kw, loc, msg in (
            ({"count": 0}, "count", "greater than or equal to 1"),
            ({"count": 65}, "count", "less than or equal to 64"),
            ({"count": 1, "at_turn": 7}, "at_turn", "at_turn 7 is past episode fk-refused's current turn"),
            ({"count": 1, "mechanism": "criu"}, "mechanism", "'replay'"),
        ):
            with pytest.raises(errors.ValidationError) as vi:
                env.fork(**kw)  # type: ignore[arg-type]
            assert vi.value.errors and vi.value.errors[0]["loc"] == [loc] and msg in vi.value.errors[0]["msg"], (kw, vi.value.data)
            assert env.step("count").response is not None
        # Capacity: 1 of 3 slots is held; a fork of 3 needs 3 and makes none.
        with pytest.raises(errors.CapacityError) as ci:
            env.fork(3)
        assert ci.value.max_sessions == 3 and ci.value.active_sessions == 1
        assert "a fork of 3 siblings needs 3 free session slots" in ci.value.message
        assert http.health().active_sessions == 1
        # A fork of one names the session (the parent's id), for HTTP.
        (s,) = env.fork(1)
        with env.attach_sibling(s) as sib:
            assert sib.step("count").turn_number == env.state().step_count + 1
        sid = env.session_id
        assert sid
        with pytest.raises(errors.ValidationError) as hv:
            http.fork(sid, 65)
        assert hv.value.status == 422 and hv.value.errors[0]["loc"] == ["count"]
        with pytest.raises(errors.ServerError) as hn:
            http.fork("no-such-session", 1)
        assert hn.value.status == 404

        # Busy: a turn started over HTTP on this session waits for a file;
        # a fork meanwhile is refused and the turn is not disturbed.
        gates = Path(tempfile.mkdtemp(prefix="harnessd-gate-", dir="/tmp"))
        try:
            gates.chmod(0o755)
            gate = gates / "gate"
            answer: dict[str, Any] = {}

            def held_step() -> None:
                body = json.dumps({"session_id": sid, "action": {"message": f"waitfor {gate};;reply held turn done"}}).encode()
                req = urllib.request.Request(d.url + "/step", data=body, method="POST", headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=60) as r:
                    answer.update(json.loads(r.read()))

            t = threading.Thread(target=held_step)
            t.start()
            try:
                deadline = time.monotonic() + 30
                while not env.state().turn_running:
                    assert time.monotonic() < deadline, "the held turn did not start"
                    time.sleep(0.02)
                with pytest.raises(errors.BusyError) as bi:
                    env.fork(1)
                assert bi.value.code == "BUSY" and "between turns" in bi.value.message
                with pytest.raises(errors.BusyError) as bh:
                    http.fork(sid, 1)
                assert bh.value.status == 409
                assert env.state().turn_running
            finally:
                gate.write_text("")
                t.join(60)
        finally:
            shutil.rmtree(gates, ignore_errors=True)
        md = answer["observation"]["metadata"]
        assert md["response"] == "held turn done" and not md.get("error_type"), answer
        n = env.state().step_count
        assert env.step("count").response == f"turns: {n + 1}"


def _group_policy(obs: harnessd.Observation, traj: harnessd.Trajectory) -> str | None:
    """Two prefix turns calling the model, then a turn whose prompt differs
    per episode (its id), then the rubric's "5"."""
    script = ["llm what is 2+3?", "remember the-prefix;;llm are you sure?", f"recall;;llm branch {traj.episode_id}", "reply 5"]
    return script[len(traj.turns)] if len(traj.turns) < len(script) else None


def test_fork_group_of_4_shares_the_prefix(daemons) -> None:
    """rollout_group with ForkGroup(prefix_turns=2), G=4: one episode is
    played two turns and forked; each sibling is played on to its end.
    Every sibling's trajectory starts with the parent's two turns and its
    export with the parent's calls (inherited), its chain with the parent's
    last call's prompt + completion exactly; its own call extends that
    call. The converters leave the inherited tokens untrained by default,
    move them into the prompt with inherited="prompt", and train them as
    exported with "train"."""
    d = daemons.start(max_sessions=5)
    strategy = harnessd.ForkGroup(prefix_turns=2)

    async def go() -> harnessd.GroupResult:
        async with harnessd.Pool([d.url]) as pool:
            return await harnessd.rollout_group(pool, None, 4, _group_policy, group_id="fg", strategy=strategy)

    g = asyncio.run(go())
    assert not g.failed, [(e.index, e.error) for e in g.episodes]
    assert g.rewards == [1.0] * 4
    assert strategy.fork_seconds is not None and strategy.fork_seconds > 0
    trajs = [t for t in g.trajectories if t]
    prefix_turns = trajs[0].turns[:2]
    prefix_events = [ev for t in prefix_turns for ev in t.observation.events]
    prefix_ids = harnessd.CallIDs().add_events(prefix_events).ids(2)
    assert len({t.episode_id for t in trajs}) == 4 and "fg-prefix" not in {t.episode_id for t in trajs}
    for t in trajs:
        assert t.parent_episode_id == "fg-prefix" and t.forked_at == 2 and t.mechanism == "line"
        assert t.turns[:2] == prefix_turns and len(t.own_turns) == 2 and t.reset.episode_id == "fg-prefix"
        assert t.own_turns[0].observation.turn_number == 3
        assert _text(t.own_turns[0].observation).startswith("recall: the-prefix\nllm: ")
    own: list[list[int]] = []
    for ep in g.episodes:
        ex = ep.export
        assert ex is not None, ep.export_error
        calls = {c["call_index"]: c for c in ex["calls"]}
        assert sorted(calls) == [1, 2, 3]
        assert calls[1].get("inherited") and calls[2].get("inherited") and not calls[3].get("inherited")
        assert calls[3]["parent"] == 2
        (ch,) = ex["chains"]
        assert ch["input_ids"][:len(prefix_ids)] == prefix_ids
        inh = [sp for sp in ch["spans"] if sp.get("inherited")]
        assert {sp["call_index"] for sp in inh} == {1, 2} and max(sp["end"] for sp in inh) == len(prefix_ids)
        own.append(ch["input_ids"][len(prefix_ids):])
    assert len({tuple(o) for o in own}) == 4, "the siblings' own branches are alike"

    def trained(s: convert.Sample) -> int:
        return sum(s.loss_mask)

    masked, prompt, train = (convert.samples_from_group(g, inherited=m) for m in ("mask", "prompt", "train"))
    for sm, sp, st, ep in zip(masked, prompt, train, g.episodes):
        assert ep.export is not None
        calls = {c["call_index"]: c for c in ep.export["calls"]}
        assert sm.inherited_calls == [1, 2] and sm.calls == [1, 2, 3]
        assert trained(sm) == calls[3]["completion_tokens"] and trained(sp) == trained(sm)
        assert trained(st) == sum(c["completion_tokens"] for c in calls.values())
        assert sm.input_ids == sp.input_ids == st.input_ids
        assert sp.prompt_ids == prefix_ids and sm.prompt_ids == st.prompt_ids and len(sm.prompt_ids) < len(prefix_ids)
        # Untrained tokens carry no logprob; trained ones the export's.
        assert all(lp == 0.0 for lp, m in zip(sm.logprobs, sm.loss_mask) if not m)
        v_mask, v_train = convert.to_verifiers(ep), convert.to_verifiers(ep, inherited="train")
        assert [s["extras"]["call_index"] for s in v_mask["trajectory"]] == [3]
        assert [(s["extras"]["call_index"], s["extras"]["inherited"]) for s in v_train["trajectory"]] == [(1, True), (2, True), (3, False)]
        assert v_mask["prompt"] == [{"role": "user", "content": "llm what is 2+3?"}] and len(v_mask["completion"]) == 7
    with pytest.raises(ValueError):
        convert.samples_from_group(g, inherited="twice")
    _wait_sessions(d.url, 0)


def test_fork_group_failures_are_results(daemons) -> None:
    """Siblings that fail are failed results with the server's reason, not
    an exception: a replay whose prefix asked the model with the episode's
    own id diverges in every sibling. A prefix that ends before the fork
    fails every episode with PrefixEnded."""
    d = daemons.start(max_sessions=5)

    async def go(strategy: harnessd.ForkGroup) -> harnessd.GroupResult:
        async with harnessd.Pool([d.url]) as pool:
            return await harnessd.rollout_group(pool, None, 4, _group_policy, group_id="ff", strategy=strategy)

    g = asyncio.run(go(harnessd.ForkGroup(messages=["llmenv HARNESSD_EPISODE_ID"], mechanism="replay")))
    assert len(g.failed) == 4
    for ep in g.episodes:
        assert isinstance(ep.error, errors.SiblingFailed) and ep.trajectory is None and ep.export is None
        assert "diverged" in ep.error.sibling.error and ep.error.sibling.mechanism == "replay", ep.error.sibling
    g = asyncio.run(go(harnessd.ForkGroup(messages=["reply hi", "done"])))
    assert len(g.failed) == 4
    for ep in g.episodes:
        assert isinstance(ep.error, harnessd.PrefixEnded) and "after 2 of 2 turns" in str(ep.error)
        assert len(ep.error.trajectory.turns) == 2
    _wait_sessions(d.url, 0)


def test_fork_group_finds_a_daemon_with_room_for_all(daemons) -> None:
    """A ForkGroup of G needs G + 1 slots on one daemon: the pool places it
    on the daemon that has them (not the one with most free slots but too
    few), counts them all as its own while the group runs, and says at
    once when no daemon could hold them."""
    small, big = daemons.start(max_sessions=2), daemons.start(max_sessions=4)
    seen: list[int] = []

    def watching(obs: harnessd.Observation, traj: harnessd.Trajectory) -> str | None:
        if len(traj.turns) == 2:
            seen.append(sum(d.ours for d in pool_ref[0].daemons if d.url == big.url))
        return _group_policy(obs, traj)

    pool_ref: list[harnessd.Pool] = []

    async def go(g: int) -> harnessd.GroupResult:
        async with harnessd.Pool([small.url, big.url]) as pool:
            pool_ref[:] = [pool]
            return await harnessd.rollout_group(pool, None, g, watching, group_id=f"room-{g}", strategy=harnessd.ForkGroup(2))

    g = asyncio.run(go(3))
    assert not g.failed and {t.daemon for t in g.trajectories if t} == {big.url}
    assert seen == [4] * 3, seen
    g = asyncio.run(go(4))
    assert len(g.failed) == 4 and all(isinstance(e.error, harnessd.NoDaemonAvailable) for e in g.episodes)
    assert "no daemon has 5 session slots" in str(g.episodes[0].error)


def test_a_refused_fork_fails_the_group(daemons) -> None:
    """A harness that refuses the line protocol's fork: a fork asking for
    "line" is refused (EXECUTION_ERROR, "fork unavailable: …") and makes no
    sibling; a ForkGroup asking for it fails every episode with that error
    rather than raising; the best available (replay) still forks it."""
    d = daemons.start(max_sessions=5, agent_args=["--fork-refuse"])
    with harnessd.Env(d.url) as env:
        env.reset()
        env.step("remember x")
        with pytest.raises(errors.ExecutionError) as ei:
            env.fork(1, mechanism="line")
        assert ei.value.message.startswith("fork unavailable"), ei.value.message
        assert harnessd.DaemonHTTP(d.url).health().active_sessions == 1
        (s,) = env.fork(1)
        assert s.ok and s.mechanism == "replay", s
        with env.attach_sibling(s) as sib:
            assert sib.step("recall").response == "recall: x"

    async def go(strategy: harnessd.ForkGroup) -> harnessd.GroupResult:
        async with harnessd.Pool([d.url]) as pool:
            return await harnessd.rollout_group(pool, None, 4, _group_policy, group_id="refused", strategy=strategy)

    g = asyncio.run(go(harnessd.ForkGroup(2, mechanism="line")))
    assert len(g.failed) == 4
    assert all(isinstance(e.error, errors.ExecutionError) and "fork unavailable" in str(e.error) for e in g.episodes)
    _wait_sessions(d.url, 0)


def test_fork_group_prefix_retried_when_its_daemon_dies(daemons) -> None:
    """The prefix's daemon killed mid-prefix: the prefix is played again,
    whole, on the other daemon (id ``…-prefix-r1``) and forked there; every
    result lists the failed attempt."""
    ds = {d.url: d for d in (daemons.start(max_sessions=5), daemons.start(max_sessions=5))}
    killed: list[str] = []

    def killing(obs: harnessd.Observation, traj: harnessd.Trajectory) -> str | None:
        if len(traj.turns) == 1 and not killed:
            ds[traj.daemon].kill()
            killed.append(traj.daemon)
        return _group_policy(obs, traj)

    async def go() -> harnessd.GroupResult:
        retry = harnessd.RetryPolicy(max_attempts=3, backoff=0.01, down_for=60)
        async with harnessd.Pool(list(ds), retry=retry) as pool:
            return await harnessd.rollout_group(pool, None, 4, killing, group_id="rt", strategy=harnessd.ForkGroup(2))

    g = asyncio.run(go())
    assert len(killed) == 1 and not g.failed, [e.error for e in g.episodes]
    for e in g.episodes:
        assert [a.daemon for a in e.attempts] == killed and isinstance(e.attempts[0].error, errors.TransportError)
        assert e.trajectory is not None and e.trajectory.daemon != killed[0]
        assert e.trajectory.parent_episode_id == "rt-prefix-r1" and e.reward == 1.0


def test_fork_group_policy_bug_ends_the_group_and_its_sessions(daemons) -> None:
    """An error that is not the daemon's (the policy's bug, here in the
    siblings' first turn) ends the whole group, as in ResetGroup; every
    sibling's session is ended with it — the attached ones by their close,
    any not yet attached by POST /close — not left to the idle timeout."""
    d = daemons.start(max_sessions=9, flags=["--idle-timeout", "1h"])

    def buggy(obs: harnessd.Observation, traj: harnessd.Trajectory) -> str | None:
        if len(traj.turns) == 2:
            raise RuntimeError("policy bug")
        return _group_policy(obs, traj)

    async def go() -> None:
        async with harnessd.Pool([d.url]) as pool:
            await harnessd.rollout_group(pool, None, 8, buggy, group_id="bug", strategy=harnessd.ForkGroup(2))

    with pytest.raises(RuntimeError, match="policy bug"):
        asyncio.run(go())
    _wait_sessions(d.url, 0)
