"""Policy versions and sampling pins against real daemons: a reset's
``sampling`` reaching the engine (the fake LLM in engine mode logs what it
received), the policy version set over ``/ws``, HTTP and a Pool, and a
version change in the middle of a turn, held there by a proxy between the
daemon's gateway and the engine, ending in the export's
``straddles_update`` and the staleness filter's verdicts."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import harnessd
from harnessd import convert, errors
from harnessd.policy import STALE, STRADDLES_UPDATE, filter_stale

from conftest import DaemonFactory, Proc, need_binary

#: The longest any test waits for a step or for the held request (a
#: bound on a failure, never the order of the test's work).
WAIT = 60.0


def start_engine(d: Path) -> Proc:
    """A fake LLM in engine mode of the test's own, so its request log
    holds only this test's calls."""
    d.mkdir()
    return Proc([need_binary("testharness"), "llm", "--engine", "--quiet", "--addr-file", str(d / "addr")], d, d / "addr")


def engine_requests(engine_url: str) -> list[dict[str, Any]]:
    """The generation requests the fake engine received, with bodies."""
    with urllib.request.urlopen(engine_url + "/_fakellm/requests?bodies=1", timeout=10) as r:
        entries = json.loads(r.read())
    return [e for e in entries if e.get("kind") == "generate"]


class HoldingProxy:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream`` that holds the
    first Chat Completions request: it sets :attr:`arrived` when the
    request is in, and forwards it only once :attr:`release` is set. Every
    other request passes straight through."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.arrived = threading.Event()
        self.release = threading.Event()
        self._held = False
        self._mu = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy.forward(self, None)

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                if self.path.endswith("/chat/completions"):
                    with proxy._mu:
                        hold, proxy._held = not proxy._held, True
                    if hold:
                        proxy.arrived.set()
                        if not proxy.release.wait(WAIT):
                            self.send_error(504, "the test never released the held request")
                            return
                proxy.forward(self, body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="holding-proxy", daemon=True)
        self._thread.start()

    def forward(self, h: http.server.BaseHTTPRequestHandler, body: bytes | None) -> None:
        """Send the request on to the upstream and its answer back."""
        req = urllib.request.Request(self.upstream + h.path, data=body, method=h.command)
        for k, v in h.headers.items():
            if k.lower() not in ("host", "content-length", "connection", "accept-encoding"):
                req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=WAIT) as r:
                status, ctype, data = r.status, r.headers.get("Content-Type", "application/json"), r.read()
        except urllib.error.HTTPError as e:
            status, ctype, data = e.code, e.headers.get("Content-Type", "application/json"), e.read()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def close(self) -> None:
        """Release anything held and stop serving."""
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Proc]:
    """This test's own fake engine."""
    p = start_engine(tmp_path / "engine")
    yield p
    p.stop()


def test_a_resets_sampling_pin_reaches_the_engine(tmp_path: Path, engine: Proc) -> None:
    f = DaemonFactory(tmp_path / "d", engine.addr)
    (tmp_path / "d").mkdir()
    try:
        d = f.start()
        pin = {"temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "seed": 11, "max_tokens": 64}
        with harnessd.Env(d.url) as env:
            env.reset(episode_id="ep-pin", sampling=pin)
            obs = env.step("llm what is 2+3")
            assert obs.response is not None and obs.response.startswith("llm: ")
            ex = env.export()
            # The engine received exactly the pinned values.
            [req] = engine_requests(engine.addr)
            body = req["body"]
            for k, v in pin.items():
                assert body.get(k) == v, f"{k}: the engine got {body.get(k)!r}, pinned {v!r}"
            # The export says so: the call pinned, nothing sent otherwise.
            [call] = ex["calls"]
            assert call["sampling_pinned"] is True and "sampling_differs" not in call
            for k, v in pin.items():
                assert ex["pinned_sampling"][k] == v and call["effective_sampling"][k] == v
            [s] = convert.samples_from_export(ex)
            assert s.sampling_pinned and s.sampling_differs_calls == []

            # The pin is the episode's: the next reset without one is not
            # pinned, and the engine gets no temperature (the agent asks none).
            env.reset(episode_id="ep-free")
            env.step("llm again")
            free = env.export()
            body = engine_requests(engine.addr)[-1]["body"]
            assert "temperature" not in body and "seed" not in body
            assert "sampling_pinned" not in free["calls"][0] and "pinned_sampling" not in free
            assert not convert.samples_from_export(free)[0].sampling_pinned

            # The daemon judges the pin: out of range, or a field it has not.
            for bad in ({"temperature": -1}, {"logit_bias": {}}):
                with pytest.raises(errors.ValidationError) as vi:
                    env.reset(episode_id="ep-bad", sampling=bad)
                assert any("sampling" in [str(x) for x in e.get("loc", [])] for e in vi.value.errors) or "sampling" in vi.value.message
    finally:
        f.stop_all()


def wait_path(p: Path, t: threading.Thread) -> None:
    """Wait until ``p`` exists (the agent wrote it) while ``t`` (the step)
    runs: a condition polled with a deadline, as conftest waits for an
    address file."""
    deadline = time.monotonic() + WAIT
    while not p.exists():
        assert t.is_alive(), "the step ended before the agent wrote its file"
        assert time.monotonic() < deadline, f"{p} never appeared"
        time.sleep(0.01)


def test_an_agents_own_sampling_is_replaced_by_the_pin(tmp_path: Path, engine: Proc) -> None:
    # testharness agent's llm directive asks no sampling of its own, so the
    # test plays an agent that does: during a turn (the agent waits for a
    # file) it calls the episode's gateway with the episode's URL and key,
    # which the agent's environment gave, asking what Copilot-like agents
    # ask (temperature 0, top_p 0.95) and fields that distort sampling.
    (tmp_path / "d").mkdir()
    f = DaemonFactory(tmp_path / "d", engine.addr)
    try:
        d = f.start()
        pin = {"temperature": 1.0, "top_p": 1.0, "seed": 7}
        with harnessd.Env(d.url) as env:
            env.reset(episode_id="ep-agent", sampling=pin)
            o = env.step("env HARNESSD_MODEL_URL;;env HARNESSD_MODEL_API_KEY")
            got = dict(line.split("=", 1) for line in (o.response or "").splitlines() if "=" in line)
            url, key = got["HARNESSD_MODEL_URL"].rstrip("/"), got["HARNESSD_MODEL_API_KEY"]
            started, gate = tmp_path / "started", tmp_path / "gate"
            out: dict[str, Any] = {}
            t = threading.Thread(target=lambda: out.update(obs=env.step(f"write {started} yes;;waitfor {gate};;reply done")))
            t.start()
            try:
                wait_path(started, t)
                asked = {"temperature": 0, "top_p": 0.95, "presence_penalty": 0.5, "logit_bias": {"5": 1}, "max_tokens": 100}
                body = {"model": "any", "messages": [{"role": "user", "content": "what is 2+3?"}], **asked}
                req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
                with urllib.request.urlopen(req, timeout=WAIT) as r:
                    assert json.loads(r.read())["choices"]
            finally:
                gate.write_text("go")
                t.join(WAIT)
            assert (out["obs"].response or "").endswith("done")
            ex = env.export()
        # The engine got the pin and the agent's max_tokens (a length bound),
        # none of the agent's temperature, top_p, penalty or bias.
        [req_log] = engine_requests(engine.addr)
        sent = req_log["body"]
        assert {k: sent.get(k) for k in pin} == pin and sent.get("max_tokens") == 100
        assert "presence_penalty" not in sent and "logit_bias" not in sent
        [call] = ex["calls"]
        assert call["sampling"] == asked  # what the agent asked, recorded
        assert call["sampling_pinned"] is True
        assert sorted(call["sampling_stripped"]) == ["logit_bias", "presence_penalty"]
        assert sorted(call["sampling_overridden"]) == ["temperature", "top_p"]
        assert "sampling_differs" not in call
        [s] = convert.samples_from_export(ex)
        assert s.sampling_pinned and s.sampling_differs_calls == []
    finally:
        f.stop_all()


def test_policy_version_over_ws_and_http(daemons: DaemonFactory) -> None:
    d = daemons.start()
    http = harnessd.DaemonHTTP(d.url)
    with harnessd.Env(d.url) as env:
        env.reset(episode_id="ep-ws", policy_version=2)
        got = http.policy_version(episode_id="ep-ws")
        assert (got.version, got.scope, got.episode_id) == (2, "session", "ep-ws") and got.session_id
        assert http.policy_version().version == 0  # the daemon's is untouched
        pv = env.set_policy_version(3)
        assert (pv.version, pv.scope, pv.episode_id) == (3, "session", "ep-ws")
        assert env.set_policy_version(5, scope="daemon") == harnessd.PolicyVersion(5, "daemon")
        # The daemon's was set last, so it is the session's too.
        assert env.policy_version().version == 5 and http.policy_version().version == 5
        assert env.policy_version("daemon").version == 5
        env.set_policy_version(6)
        assert env.policy_version().version == 6 and env.policy_version("daemon").version == 6 - 1
        env.step("llm hi")
        [call] = env.export()["calls"]
        assert call["policy_version_sent"] == 6 and call["policy_version"] == 6 and "straddles_update" not in call
        # Over HTTP, by session id as well as by episode.
        sid = http.policy_version(episode_id="ep-ws").session_id
        assert sid and http.set_policy_version(8, session_id=sid).version == 8
        assert env.policy_version().version == 8
    with pytest.raises(errors.ServerError) as ei:
        http.set_policy_version(1, episode_id="no-such-episode")
    assert ei.value.status == 404
    with pytest.raises(errors.ValidationError) as vi:
        http._call("POST", "/policy_version", {"version": -1})  # past the client's own check
    assert vi.value.status == 422 and vi.value.errors[0]["loc"] == ["version"]
    with pytest.raises(ValueError):
        http.set_policy_version(-1)


class GrowingProvider:
    """A provider whose list the test extends."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    async def daemons(self) -> Sequence[str]:
        return list(self.urls)


def test_pool_sets_the_version_on_every_daemon(daemons: DaemonFactory) -> None:
    a, b, c, gone = daemons.start(), daemons.start(), daemons.start(), daemons.start()
    gone.kill()
    provider = GrowingProvider([a.url, b.url])

    async def go() -> None:
        pool = harnessd.Pool(provider)
        await pool.refresh()
        got = await pool.set_policy_version(7)
        assert sorted(got) == sorted([a.url, b.url]) and all(v == harnessd.PolicyVersion(7, "daemon") for v in got.values())
        for u in (a.url, b.url):
            assert harnessd.DaemonHTTP(u).policy_version().version == 7
        # A daemon the provider adds later gets the version on refresh.
        provider.urls.append(c.url)
        await pool.refresh()
        assert harnessd.DaemonHTTP(c.url).policy_version().version == 7
        # A daemon that cannot take it: the others still do, the call
        # says which failed, and that one is kept out of new sessions.
        provider.urls.append(gone.url)
        with pytest.raises(harnessd.PolicyVersionNotSet) as ei:
            await pool.set_policy_version(8)
        assert list(ei.value.failed) == [gone.url] and sorted(ei.value.done) == sorted([a.url, b.url, c.url])
        assert isinstance(ei.value, errors.InfrastructureError)
        assert [s["down"] for s in pool.status() if s["url"] == gone.url][0].startswith("policy_version")
        for u in (a.url, b.url, c.url):
            assert harnessd.DaemonHTTP(u).policy_version().version == 8

    asyncio.run(go())


def test_a_version_change_mid_turn(tmp_path: Path, engine: Proc) -> None:
    proxy = HoldingProxy(engine.addr)
    (tmp_path / "d").mkdir()
    f = DaemonFactory(tmp_path / "d", proxy.url)
    try:
        d = f.start()
        http = harnessd.DaemonHTTP(d.url)
        with harnessd.Env(d.url) as env:
            env.reset(episode_id="ep-mid", policy_version=3)
            out: dict[str, Any] = {}

            def step() -> None:
                try:
                    out["obs"] = env.step("llm what is 2+3")
                except BaseException as e:  # noqa: BLE001 - handed to the test's thread
                    out["error"] = e

            t = threading.Thread(target=step, name="step")
            t.start()
            # The model call is at the proxy, sent under version 3: the
            # trainer moves to 4 while the engine "samples".
            assert proxy.arrived.wait(WAIT), "the model call never reached the proxy"
            assert http.set_policy_version(4, episode_id="ep-mid").version == 4
            proxy.release.set()
            t.join(WAIT)
            assert not t.is_alive() and "error" not in out, out.get("error")
            assert out["obs"].response.startswith("llm: ")
            # A second turn, all under version 4.
            env.step("llm and 3+4")
            ex = env.export()

            c1, c2 = ex["calls"]
            assert (c1["policy_version_sent"], c1["policy_version"], c1.get("straddles_update")) == (3, 4, True)
            assert (c2["policy_version_sent"], c2["policy_version"]) == (4, 4) and "straddles_update" not in c2
            assert ex["policy_version"] == 4
            # The gateway's events of the turn say the same.
            resp = [e for e in out["obs"].events if e.source == "gateway" and e.type == "llm_response"]
            assert resp and resp[0].data.get("straddles_update") is True

            [s] = convert.samples_from_export(ex)
            assert s.calls == [1, 2] and s.policy_versions_sent == [3, 4] and s.policy_versions == [4, 4]
            assert s.straddling_calls == [1] and s.oldest_policy_version == 3

            # The filter: dropped for straddling; without that rule kept at
            # one step off policy (3 >= 4 - 1) and dropped at none.
            kept, dropped = filter_stale([s], 4, 1)
            assert not kept and [x.reason for x in dropped] == [STRADDLES_UPDATE]
            kept, dropped = filter_stale([s], 4, 1, drop_straddling=False)
            assert kept == [s] and not dropped
            kept, dropped = filter_stale([s], 4, 0, drop_straddling=False)
            assert not kept and [(x.reason, x.off_policy_steps) for x in dropped] == [(STALE, 1)]

            # The next episode of the session stays at 4: on policy, kept.
            env.reset(episode_id="ep-next")
            env.step("llm hi")
            [n] = convert.samples_from_export(env.export())
            assert n.policy_versions_sent == [4] and not n.straddles_update
            kept, dropped = filter_stale([s, n], 4, 0)
            assert kept == [n] and [x.sample for x in dropped] == [s]
    finally:
        f.stop_all()
        proxy.close()


def test_a_pinned_group_after_a_weight_sync(daemons: DaemonFactory) -> None:
    # The trainer's loop in small: set the version on every daemon, play a
    # pinned group, keep what is fresh. All of it is at the version set.
    ds = [daemons.start(max_sessions=2) for _ in range(2)]
    pin = {"temperature": 1.0, "top_p": 1.0, "seed": 3}

    def policy(obs: harnessd.Observation, traj: harnessd.Trajectory) -> str | None:
        return "llm what is 2+3?" if not traj.turns else None

    async def go() -> list[convert.Sample]:
        async with harnessd.Pool([d.url for d in ds]) as pool:
            await pool.set_policy_version(2)
            group = await harnessd.rollout_group(pool, None, 4, policy, group_id="step-2", reset_kwargs={"sampling": pin})
        assert all(e.ok for e in group.episodes), [e.error for e in group.episodes]
        assert len({t.daemon for t in group.trajectories if t}) == 2
        return convert.samples_from_group(group)

    samples = asyncio.run(go())
    assert len(samples) == 4
    assert all(s.policy_versions_sent == [2] and s.policy_versions == [2] and s.sampling_pinned for s in samples)
    kept, dropped = filter_stale(samples, 2, 0)
    assert kept == samples and not dropped
    # One more weight sync with the samples unused: one step off policy.
    kept, dropped = filter_stale(samples, 3, 0)
    assert not kept and {d.reason for d in dropped} == {STALE}
