"""Forks of a live episode (docs/fork.md, issue 24) through the client,
against real daemons: AsyncEnv/Env.fork and attach, reset(at_turn=), the
refusals as typed errors, and ForkGroup behind rollout_group with the
exports' shared prefix as the converters read it."""

from __future__ import annotations

import asyncio
import json
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
        # The session's own episode back to after turn 2.
        obs = env.reset(at_turn=2)
        assert obs.fork is not None and obs.fork["parent_episode_id"] == "fk-sync" and obs.fork["at_turn"] == 2, obs.metadata
        obs = env.step("cat f.txt;;recall;;count")
        assert obs.turn_number == 3 and _text(obs).splitlines() == ["f.txt: two", "recall: two", "turns: 3"]
        with pytest.raises(errors.ExecutionError) as xi:
            env.reset(at_turn=9)
        assert "at_turn 9" in xi.value.message
