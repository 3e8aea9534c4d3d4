"""Real daemons for the client's tests: ``bin/harnessd serve`` and
``bin/testharness llm --engine`` subprocesses on 127.0.0.1 (``make build``
puts them in ``bin/``; ``HARNESSD_BIN_DIR`` names another directory). A
missing binary skips the tests, and fails them under ``CI=true``.

Each daemon serves ``testharness agent`` (harnessd's scriptable fake
harness) in process isolation, behind a model gateway whose engine upstream
is the fake LLM in engine mode (token ids and logprobs), with a rubric
giving 1.0 to a turn whose response contains "5", and no disk quota.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

REPO = Path(__file__).resolve().parents[2]
CI = os.environ.get("CI") == "true"


def bin_dir() -> Path:
    """Where harnessd and testharness are."""
    return Path(os.environ.get("HARNESSD_BIN_DIR") or REPO / "bin")


def need_binary(name: str) -> str:
    """The binary's path, or skip (fail under CI=true) without it."""
    p = bin_dir() / name
    if not os.access(p, os.X_OK):
        msg = f"{p} is missing: run make build (or set HARNESSD_BIN_DIR)"
        if CI:
            pytest.fail(msg + " (CI=true: a missing prerequisite is a failure)")
        pytest.skip(msg)
    return str(p)


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENENV_MODE", "HARNESSD_API_TOKEN", "TMPDIR")}
    env.update(extra or {})
    return env


def _wait_file(path: Path, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            s = path.read_text().strip()
            if s:
                return s
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}) before listening:\n{log.read_text()}")
        time.sleep(0.01)
    raise RuntimeError(f"{proc.args[0]} did not write {path} within {timeout}s:\n{log.read_text()}")


class Proc:
    """A subprocess the tests started: its log file, stop and kill."""

    def __init__(self, args: list[str], workdir: Path, addr_file: Path, env: dict[str, str] | None = None) -> None:
        self.dir = workdir
        self.log = workdir / "log"
        self._logf = open(self.log, "wb")
        self.proc = subprocess.Popen(args, cwd=workdir, stdout=self._logf, stderr=subprocess.STDOUT, env=_clean_env(env), start_new_session=True)
        self.addr = _wait_file(addr_file, self.proc, self.log)

    def kill(self) -> None:
        """SIGKILL the process (a daemon dying without a drain)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()


class Daemon(Proc):
    """``harnessd serve`` on 127.0.0.1:0."""

    @property
    def url(self) -> str:
        """Its base URL."""
        return "http://" + self.addr


def write_config(path: Path, llm_url: str | None, *, rubric: bool = True, extra: str = "", agent_args: list[str] | None = None) -> Path:
    """A configuration serving testharness agent (with ``agent_args``)
    behind the model gateway (when ``llm_url``), with the "contains 5"
    rubric."""
    th = need_binary("testharness")
    cmd = ", ".join(json.dumps(a) for a in [th, "agent", *(agent_args or [])])
    y = f"name: pytest\nharness:\n  command: [{cmd}]\n"
    if llm_url:
        y += f'  model: {{url: "{llm_url}/v1", name: fake-engine, upstream: engine}}\n'
    # No per-episode disk quota: its loop devices are a machine-wide
    # resource the client's tests need not compete for (and a daemon killed
    # with SIGKILL would leave its episodes' loop mounts behind).
    y += "limits:\n  disk: 0\n"
    if rubric:
        y += "rubrics:\n  - name: five\n    type: match\n    contains: \"5\"\n"
    path.write_text(y + extra)
    return path


@pytest.fixture(scope="session")
def fake_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fake LLM in engine mode: its base URL."""
    th = need_binary("testharness")
    d = tmp_path_factory.mktemp("fakellm")
    p = Proc([th, "llm", "--engine", "--quiet", "--addr-file", str(d / "addr")], d, d / "addr")
    yield p.addr
    p.stop()


class DaemonFactory:
    """Starts daemons for one test and stops them after it."""

    def __init__(self, tmp: Path, llm_url: str | None) -> None:
        self.tmp = tmp
        self.llm_url = llm_url
        self.started: list[Daemon] = []

    def start(self, *, max_sessions: int = 2, token: str | None = None, model: bool = True, flags: list[str] | None = None,
              tasks: list[dict[str, object]] | None = None, listen: str = "127.0.0.1:0", config: str = "",
              agent_args: list[str] | None = None) -> Daemon:
        """One more daemon; ``tasks`` are JSONL tasks (docs/tasks.md) it
        serves; ``config`` is YAML added to its configuration;
        ``agent_args`` are the test agent's flags."""
        hd = need_binary("harnessd")
        d = self.tmp / f"d{len(self.started)}"
        d.mkdir()
        extra = ""
        if tasks:
            (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
            extra = "tasks:\n  jsonl: ./tasks.jsonl\n"
        cfg = write_config(d / "harnessd.yaml", self.llm_url if model else None, extra=extra + config, agent_args=agent_args)
        args = [hd, "serve", "--config", str(cfg), "--isolation", "process", "--listen", listen,
                "--addr-file", str(d / "addr"), "--max-sessions", str(max_sessions), "--log-format", "json", *(flags or [])]
        env = {"TMPDIR": str(d)}
        if token:
            env["HARNESSD_API_TOKEN"] = token
        dm = Daemon(args, d, d / "addr", env)
        self.started.append(dm)
        return dm

    def stop_all(self) -> None:
        """Stop every daemon started."""
        for d in self.started:
            d.stop()


@pytest.fixture
def daemons(tmp_path: Path, fake_llm: str) -> Iterator[DaemonFactory]:
    """A factory of daemons whose model upstream is the fake engine."""
    f = DaemonFactory(tmp_path, fake_llm)
    yield f
    f.stop_all()
