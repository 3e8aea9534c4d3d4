"""Env and AsyncEnv against a real daemon: the protocol's requests and its
errors as typed exceptions carrying the server's message."""

from __future__ import annotations

import asyncio

import pytest

import harnessd
from harnessd import errors


def test_sync_env_reset_step_state_export_close(daemons) -> None:
    d = daemons.start()
    with harnessd.Env(d.url) as env:
        obs = env.reset(episode_id="ep-sync", seed=7)
        assert obs.episode_id == "ep-sync" and not obs.done and obs.reward is None
        first = env.step("llm what is 2+3")
        obs = first
        assert obs.turn_number == 1 and obs.response is not None and obs.response.startswith("llm: ")
        kinds = [(e.source, e.type) for e in obs.events]
        assert ("gateway", "llm_request") in kinds and ("gateway", "llm_response") in kinds
        obs = env.step("reply 5")
        assert obs.reward == 1.0 and obs.response == "5"
        st = env.state()
        assert st.episode_id == "ep-sync" and st.step_count == 2 and st.active and not st.turn_running
        ex = env.export()
        assert ex["format"] == "harnessd.gateway.export/v1" and ex["episode_id"] == "ep-sync"
        assert [r["reward"] for r in ex["rewards"]] == [0.0, 1.0]
        # The chain's ids are the engine's, as the gateway's event of the
        # call reported them.
        assert ex["chains"][0]["input_ids"] == _event_ids(first, 1)
        # The HTTP route serves the same export.
        assert harnessd.DaemonHTTP(d.url).export("ep-sync") == ex
    # The session is gone once closed.
    h = harnessd.DaemonHTTP(d.url).health()
    deadline = 50
    while h.active_sessions and deadline:
        asyncio.run(asyncio.sleep(0.05))
        h = harnessd.DaemonHTTP(d.url).health()
        deadline -= 1
    assert h.active_sessions == 0 and h.max_sessions == 2


def test_async_env(daemons) -> None:
    d = daemons.start()

    async def go() -> None:
        async with harnessd.AsyncEnv(d.url) as env:
            obs = await env.reset(episode_id="ep-async")
            obs = await env.step("llm hello")
            assert obs.events[0].data.get("call_index") == 1
            ex = await env.export("ep-async")
            assert len(ex["chains"]) == 1
            assert ex["chains"][0]["input_ids"] == _event_ids(obs, 1)

    asyncio.run(go())


def _event_ids(obs: harnessd.Observation, call_index: int) -> list[int]:
    """The engine's prompt + completion ids of a call, rebuilt from the
    gateway's llm_response events (harnessd.CallIDs)."""
    try:
        return harnessd.CallIDs().add_events(obs.events).ids(call_index)
    except KeyError:
        raise AssertionError(f"no llm_response of call {call_index}") from None


def test_errors_carry_the_servers_message(daemons) -> None:
    d = daemons.start(max_sessions=1)
    with harnessd.Env(d.url) as env:
        with pytest.raises(errors.ExecutionError) as ei:
            env.step("too early")
        assert "reset" in ei.value.message.lower() or "episode" in ei.value.message.lower()
        env.reset(episode_id="ep-err")
        with pytest.raises(errors.ValidationError) as vi:
            env.step("a\x00b")
        assert vi.value.code == "VALIDATION_ERROR" and vi.value.errors[0]["loc"] == ["message"]
        # Its text names the field and why, not only "Invalid message".
        assert str(vi.value).startswith("Invalid message (code: VALIDATION_ERROR): message: "), str(vi.value)
        with pytest.raises(errors.ValidationError):
            env.reset(episode_id="x" * 300)
        # The session survives refused requests.
        assert env.step("reply 5").reward == 1.0
        with pytest.raises(errors.ExportUnavailable) as xi:
            env.export("no-such-episode")
        assert "no-such-episode" in str(xi.value) or "unknown" in str(xi.value)
        # A second session on a full daemon: CAPACITY_REACHED, an
        # infrastructure error a pool retries elsewhere.
        other = harnessd.Env(d.url)
        try:
            with pytest.raises(errors.CapacityError) as ci:
                other.reset()
            assert isinstance(ci.value, errors.InfrastructureError)
            assert ci.value.max_sessions == 1 and ci.value.active_sessions == 1
        finally:
            other.close()


def test_export_unavailable_reason(daemons) -> None:
    d = daemons.start(model=False)
    with harnessd.Env(d.url) as env:
        env.reset(episode_id="ep-nomodel")
        env.step("reply hi")
        with pytest.raises(errors.ExportUnavailable) as ei:
            env.export()
        assert ei.value.reason == "no_model_gateway"
    with pytest.raises(errors.ExportUnavailable) as hi:
        harnessd.DaemonHTTP(d.url).export("ep-nomodel")
    assert hi.value.status in (404, 409)


def test_token(daemons) -> None:
    d = daemons.start(token="s3cret")
    # A refused token is an AuthenticationError naming the knob, not an
    # infrastructure error a Pool would retry on the same daemon.
    for token, hint in ((None, "wants an API token"), ("wrong", "refused this token")):
        anon = harnessd.Env(d.url, token=token)
        try:
            with pytest.raises(errors.AuthenticationError) as ei:
                anon.connect()
        finally:
            anon.close()
        assert "401" in str(ei.value) and hint in str(ei.value) and ei.value.status == 401
        assert not isinstance(ei.value, errors.InfrastructureError)
    with harnessd.Env(d.url, token="s3cret") as env:
        assert env.reset(episode_id="ep-tok").episode_id == "ep-tok"
        env.step("llm hi")
        assert harnessd.DaemonHTTP(d.url, token="s3cret").export("ep-tok") == env.export()
    with pytest.raises(errors.ServerError) as hi:
        harnessd.DaemonHTTP(d.url).export("ep-tok")
    assert hi.value.status == 401


def test_unreachable_daemon_is_a_transport_error(tmp_path) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    env = harnessd.Env(f"http://127.0.0.1:{port}", open_timeout=5)
    try:
        with pytest.raises(errors.TransportError) as ei:
            env.connect()
        assert ei.value.url == f"http://127.0.0.1:{port}"
    finally:
        env.close()


def test_bad_url_leaves_no_thread() -> None:
    import threading

    before = threading.active_count()
    with pytest.raises(ValueError):
        harnessd.Env("ftp://example.invalid")
    assert threading.active_count() == before


def test_calls_rebuild_whole_events(daemons) -> None:
    """A growing conversation's gateway events are deltas by default; the
    helper rebuilds exactly what a reset with full_token_ids gets, and the
    export's chain."""
    d = daemons.start()
    runs = []
    with harnessd.Env(d.url) as env:
        for full in (False, True):
            env.reset(full_token_ids=full)
            evs: list[harnessd.Event] = []
            for i in range(6):
                evs += env.step(f"llm step {i}: fix the bug").events
            runs.append((evs, env.export()))
    (delta, ex), (whole, _) = runs
    resp = [e.data for e in delta if e.source == "gateway" and e.type == "llm_response"]
    req = [e.data for e in delta if e.source == "gateway" and e.type == "llm_request"]
    assert len(resp) == 6 and len(req) == 6
    # The frames carry deltas: each call after the first names the call
    # before as its base.
    for i in range(1, 6):
        assert resp[i]["parent_call_index"] == i and resp[i]["prompt_token_ids_from"] > 0
        assert req[i]["messages_call_index"] == i and req[i]["messages_from"] == 2 * i - 1
    assert not any("prompt_token_ids_from" in e.data or "messages_from" in e.data for e in whole)
    a, b = harnessd.full_calls(delta), harnessd.full_calls(whole)
    assert sorted(a) == sorted(b) == [1, 2, 3, 4, 5, 6]
    for ci in a:
        for k in ("prompt_token_ids", "completion_token_ids"):
            assert a[ci]["response"][k] == b[ci]["response"][k], (ci, k)
        assert a[ci]["request"]["messages"] == b[ci]["request"]["messages"], ci
    last = a[6]["response"]
    assert ex["chains"][0]["input_ids"] == last["prompt_token_ids"] + last["completion_token_ids"]
    # Without the base a delta cannot be rebuilt, and says so.
    with pytest.raises(harnessd.MissingBase):
        harnessd.full_calls([e for e in delta if not (e.type == "llm_response" and e.data.get("call_index") == 3)])


def test_harness_done_tells_terminated_from_truncated(daemons) -> None:
    """An episode the harness declared done has ``harness_done``; one ended by
    ``max_turns`` is done without it (the key is absent, not false, so
    ``metadata["harness_done"]`` raised KeyError) and without an error."""
    d = daemons.start(config="episode: {max_turns: 2}\n")
    with harnessd.Env(d.url) as env:
        env.reset(episode_id="ep-terminated")
        obs = env.step("done")
        assert obs.done and obs.harness_done and not obs.error_type
        env.reset(episode_id="ep-truncated")
        assert not env.step("reply one").done
        obs = env.step("reply two")
        assert obs.done and not obs.harness_done and not obs.error_type
        assert "harness_done" not in obs.metadata


def test_a_refused_session_reconnects_once_there_is_room(daemons) -> None:
    """A session the server refused (CAPACITY_REACHED) is closed by the
    server; the client's next request opens a new one. Before, it was sent
    on the dead connection and raised a TransportError, and only the request
    after that reconnected."""
    d = daemons.start(max_sessions=1)
    env = harnessd.Env(d.url)
    other = harnessd.Env(d.url)
    try:
        env.reset(episode_id="ep-first")
        with pytest.raises(errors.CapacityError):
            other.reset()
        env.close()
        h = harnessd.DaemonHTTP(d.url)
        for _ in range(100):
            if not h.health().active_sessions:
                break
            asyncio.run(asyncio.sleep(0.05))
        assert other.reset(episode_id="ep-second").episode_id == "ep-second"
    finally:
        env.close()
        other.close()


@pytest.mark.parametrize(
    "base, want",
    [
        ("127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("http://h:1/", "ws://h:1/ws"),
        ("https://h/prefix", "wss://h/prefix/ws"),
        ("ws://h:1/ws", "ws://h:1/ws"),
        ("wss://h/ws/", "wss://h/ws"),
    ],
)
def test_ws_url_does_not_double_the_route(base: str, want: str) -> None:
    """A base that is the daemon's printed ``ws://host/ws`` dials that route,
    not ``/ws/ws`` (as the Go client's wsURL)."""
    from harnessd.env import _ws_url

    assert _ws_url(base) == want
    assert _ws_url(base, "a b") == want + "?session_id=a%20b"
