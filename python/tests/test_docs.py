"""docs/training.md's worked example, run as printed against real daemons:
its output must be the one the page shows (the daemons' addresses aside)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO

DOC = REPO / "docs" / "training.md"


def blocks(text: str, heading: str = "## 3. A group rollout") -> tuple[str, str]:
    """The section's python block and the output block after "prints"."""
    sec = text.split(heading, 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", sec, re.S)
    out = re.search(r"prints\n\n```\n(.*?)```", sec, re.S)
    assert code and out, f"docs/training.md: {heading!r} lost its python or output block"
    return code.group(1), out.group(1)


def test_training_md_example(daemons, tmp_path: Path) -> None:
    code, want = blocks(DOC.read_text())
    ds = [daemons.start(max_sessions=4) for _ in range(2)]
    script = tmp_path / "rollout.py"
    script.write_text(code)
    env = {**os.environ, "HARNESSD_URLS": ",".join(d.url for d in ds), "PYTHONPATH": str(REPO / "python" / "src")}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    got = r.stdout.splitlines()
    want_lines = want.splitlines()
    assert len(got) == len(want_lines), r.stdout
    for g, w in zip(got, want_lines):
        if w.startswith("daemons:"):
            assert g == "daemons: " + repr(sorted(d.url for d in ds)), g
        else:
            assert g == w


def test_training_md_policy_versions(daemons, tmp_path: Path) -> None:
    code, want = blocks(DOC.read_text(), "## 5. Policy versions")
    d = daemons.start()
    script = tmp_path / "versions.py"
    script.write_text(code)
    env = {**os.environ, "HARNESSD_URLS": d.url, "PYTHONPATH": str(REPO / "python" / "src")}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
