#!/usr/bin/env python3
"""A group of G episodes sharing a 2-turn prefix, started two ways through
the Python client, for docs/benchmarks.md: ResetGroup (G resets, each
playing the prefix again) and ForkGroup (the prefix played once, then one
fork of G siblings, by the line protocol's fork and by replay).

    /usr/bin/python3 python/bench/bench_fork.py [--group 8] [--repeats 5]
        [--delays 0,0.25] [--bin bin]

Each delay starts the fake LLM in engine mode answering every model call
after that many seconds (standing in for an engine's generation time; 0:
at once) and one ``harnessd serve`` (process isolation, the test agent,
--max-sessions G+1) on 127.0.0.1. An episode is four turns: two prefix
turns each making a model call through the gateway, a turn making a call
whose prompt names the episode (so the G branches differ), and an answer
the rubric scores; then the training export. Each run is the wall time of
rollout_group, from the first reset to the last export; the engine calls
are the fake LLM's log of the run. Prints one JSON line per run and a
median (min–max) summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import harnessd  # noqa: E402
from bench_pool import start, stop  # noqa: E402

PREFIX = 2


def policy(obs: harnessd.Observation, traj: harnessd.Trajectory) -> str | None:
    script = ["llm what is 2+3?", "llm are you sure?", f"llm branch {traj.episode_id}", "reply 5"]
    return script[len(traj.turns)] if len(traj.turns) < len(script) else None


def llm_calls(llm_url: str) -> int:
    with urllib.request.urlopen(llm_url + "/_fakellm/requests", timeout=10) as r:
        entries = json.loads(r.read())
    if isinstance(entries, dict):
        entries = entries.get("requests") or entries.get("entries") or []
    return sum(1 for e in entries if e.get("kind") == "generate")


def llm_reset(llm_url: str) -> None:
    urllib.request.urlopen(urllib.request.Request(llm_url + "/_fakellm/reset", method="POST"), timeout=10).read()


async def run(url: str, g: int, strategy: harnessd.GroupStrategy, gid: str) -> float:
    async with harnessd.Pool([url]) as pool:
        t0 = time.perf_counter()
        grp = await harnessd.rollout_group(pool, None, g, policy, group_id=gid, strategy=strategy)
        dt = time.perf_counter() - t0
    bad = [e for e in grp.episodes if not e.ok or e.export is None or e.reward != 1.0]
    if bad:
        raise SystemExit(f"{gid}: {len(bad)} episodes failed: {bad[0].error or bad[0].export_error}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--delays", default="0,0.25")
    ap.add_argument("--bin", default=str(REPO / "bin"))
    a = ap.parse_args()
    bindir = Path(a.bin)
    tmp = Path(tempfile.mkdtemp(prefix="bench-fork-"))
    modes = {
        "reset": lambda: harnessd.ResetGroup(),
        "fork-line": lambda: harnessd.ForkGroup(PREFIX),
        "fork-replay": lambda: harnessd.ForkGroup(PREFIX, mechanism="replay"),
    }
    results: dict[tuple[float, str], list[tuple[float, int, float | None]]] = {}
    for delay in [float(x) for x in a.delays.split(",")]:
        d = tmp / f"delay-{delay}"
        d.mkdir()
        script = d / "script.json"
        script.write_text(json.dumps({"rules": [{"name": "engine-time", "when": {}, "reply": {"delay": delay}}]} if delay else {"rules": []}))
        llm, llm_url = start([str(bindir / "testharness"), "llm", "--engine", "--quiet", "--script", str(script), "--addr-file", str(d / "llm.addr")],
                             d / "llm.addr", d / "llm.log")
        cfg = d / "harnessd.yaml"
        cfg.write_text(
            f'name: bench-fork\nharness:\n  command: ["{bindir / "testharness"}", agent]\n'
            f'  model: {{url: "{llm_url}/v1", name: fake-engine, upstream: engine}}\n'
            'limits:\n  disk: 0\n'
            'rubrics:\n  - name: five\n    type: match\n    contains: "5"\n'
        )
        dm, addr = start([str(bindir / "harnessd"), "serve", "--config", str(cfg), "--isolation", "process", "--listen", "127.0.0.1:0",
                          "--addr-file", str(d / "addr"), "--max-sessions", str(a.group + 1), "--log-level", "warn"],
                         d / "addr", d / "log", {"TMPDIR": str(d)})
        url = "http://" + addr
        try:
            for name, make in modes.items():
                asyncio.run(run(url, a.group, make(), f"warm-{name}"))
            for r in range(a.repeats):
                # Rotate the order so that no mode always runs first.
                names = list(modes)
                names = names[r % len(names):] + names[:r % len(names)]
                for name in names:
                    strategy = modes[name]()
                    llm_reset(llm_url)
                    dt = asyncio.run(run(url, a.group, strategy, f"{name}-{r}"))
                    calls = llm_calls(llm_url)
                    fs = getattr(strategy, "fork_seconds", None)
                    results.setdefault((delay, name), []).append((dt, calls, fs))
                    print(json.dumps({"mode": name, "group": a.group, "engine_delay_s": delay, "seconds": round(dt, 3), "engine_calls": calls,
                                      "fork_seconds": None if fs is None else round(fs, 4)}), flush=True)
        finally:
            stop(dm)
            stop(llm)
    print()
    print(f"| engine delay per call | group start | wall time of the group, G={a.group} (s) | fork request (ms) | engine calls |")
    print("| --- | --- | --- | --- | --- |")
    for (delay, name), rs in results.items():
        ts = [x[0] for x in rs]
        fss = [x[2] * 1000 for x in rs if x[2] is not None]
        fork = f"{statistics.median(fss):.0f} ({min(fss):.0f}–{max(fss):.0f})" if fss else "—"
        calls = sorted({x[1] for x in rs})
        print(f"| {delay * 1000:.0f} ms | {name} | {statistics.median(ts):.3f} ({min(ts):.3f}–{max(ts):.3f}) | {fork} | {'/'.join(map(str, calls))} |")


if __name__ == "__main__":
    main()
