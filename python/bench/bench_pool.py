#!/usr/bin/env python3
"""Episodes per second through the Python Pool over N local daemons, and
through the Go client (package client, python/bench/goclient) over the same
daemons, for docs/benchmarks.md.

    /usr/bin/python3 python/bench/bench_pool.py [--daemons 1,2,4] [--episodes 96]
        [--sessions-per-daemon 4] [--repeats 3] [--bin bin]

Each configuration starts the fake LLM in engine mode and N ``harnessd
serve`` daemons (process isolation, --max-sessions S) on 127.0.0.1, warms
them up, then plays E episodes at concurrency N*S with each client. An
episode is a reset, three steps (two model calls through the gateway, one
answer the rubric scores) and the training export (Python: the /ws export
frame; Go: GET /episodes/{id}/export, package client having no export
call). Prints one JSON line per run and a median summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "src"))

import harnessd  # noqa: E402
from harnessd.rollout import Trajectory  # noqa: E402

MESSAGES = ["llm what is 2+3", "llm are you sure", "reply 5"]


def start(args: list[str], addr: Path, log: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    f = open(log, "wb")
    p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if addr.exists() and addr.read_text().strip():
            return p, addr.read_text().strip()
        if p.poll() is not None:
            raise SystemExit(f"{args[0]} exited: {log.read_text()}")
        time.sleep(0.01)
    raise SystemExit(f"{args[0]} did not listen: {log.read_text()}")


def stop(p: subprocess.Popen[bytes]) -> None:
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def policy(obs: harnessd.Observation, traj: Trajectory) -> str | None:
    return MESSAGES[len(traj.turns)] if len(traj.turns) < len(MESSAGES) else None


async def python_run(urls: list[str], episodes: int, concurrency: int, prefix: str) -> float:
    async with harnessd.Pool(urls, max_concurrency=concurrency) as pool:
        t0 = time.perf_counter()
        g = await harnessd.rollout_group(pool, None, episodes, policy, group_id=prefix)
        dt = time.perf_counter() - t0
    bad = [e for e in g.episodes if not e.ok or e.export is None or not e.export["chains"]]
    if bad:
        raise SystemExit(f"python: {len(bad)} episodes failed: {bad[0].error or bad[0].export_error}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemons", default="1,2,4")
    ap.add_argument("--episodes", type=int, default=96)
    ap.add_argument("--sessions-per-daemon", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bin", default=str(REPO / "bin"))
    a = ap.parse_args()
    bindir = Path(a.bin)
    tmp = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    goclient = tmp / "goclient"
    subprocess.run(["go", "build", "-o", str(goclient), "./python/bench/goclient"], cwd=REPO, check=True)
    llm, llm_url = start([str(bindir / "testharness"), "llm", "--engine", "--quiet", "--addr-file", str(tmp / "llm.addr")], tmp / "llm.addr", tmp / "llm.log")
    cfg = tmp / "harnessd.yaml"
    cfg.write_text(
        f'name: bench\nharness:\n  command: ["{bindir / "testharness"}", agent]\n'
        f'  model: {{url: "{llm_url}/v1", name: fake-engine, upstream: engine}}\n'
        'limits:\n  disk: 0\n'
        'rubrics:\n  - name: five\n    type: match\n    contains: "5"\n'
    )
    results: dict[tuple[str, int], list[float]] = {}
    try:
        for n in [int(x) for x in a.daemons.split(",")]:
            procs, urls = [], []
            for i in range(n):
                d = tmp / f"n{n}-d{i}"
                d.mkdir()
                p, addr = start([str(bindir / "harnessd"), "serve", "--config", str(cfg), "--isolation", "process",
                                 "--listen", "127.0.0.1:0", "--addr-file", str(d / "addr"), "--max-sessions", str(a.sessions_per_daemon),
                                 "--log-level", "warn"], d / "addr", d / "log", {"TMPDIR": str(d)})
                procs.append(p)
                urls.append("http://" + addr)
            conc = n * a.sessions_per_daemon
            try:
                asyncio.run(python_run(urls, conc, conc, f"warm-{n}"))
                for r in range(a.repeats):
                    # Alternate which client goes first, so neither always
                    # runs on daemons the other has just warmed.
                    order = ["python", "go"] if r % 2 == 0 else ["go", "python"]
                    for who in order:
                        if who == "python":
                            dt = asyncio.run(python_run(urls, a.episodes, conc, f"py-{n}-{r}"))
                        else:
                            out = subprocess.run([str(goclient), "-urls", ",".join(urls), "-episodes", str(a.episodes), "-concurrency", str(conc),
                                                  "-messages", "|".join(MESSAGES)], capture_output=True, text=True)
                            if out.returncode != 0:
                                raise SystemExit("goclient: " + out.stderr)
                            dt = json.loads(out.stdout)["seconds"]
                        eps = a.episodes / dt
                        results.setdefault((who, n), []).append(eps)
                        print(json.dumps({"client": who, "daemons": n, "concurrency": conc, "episodes": a.episodes, "seconds": round(dt, 3), "episodes_per_second": round(eps, 1)}), flush=True)
            finally:
                for p in procs:
                    stop(p)
    finally:
        stop(llm)
    print()
    print("| daemons | concurrency | Python pool (episodes/s) | Go client (episodes/s) | Python / Go |")
    print("| --- | --- | --- | --- | --- |")
    for n in sorted({k[1] for k in results}):
        py, go = results[("python", n)], results[("go", n)]
        mp, mg = statistics.median(py), statistics.median(go)
        print(f"| {n} | {n * a.sessions_per_daemon} | {mp:.1f} ({min(py):.1f}–{max(py):.1f}) | {mg:.1f} ({min(go):.1f}–{max(go):.1f}) | {mp / mg:.2f} |")


if __name__ == "__main__":
    main()
