"""The package's type hints hold: mypy --strict over src/harnessd (Debian's
python3-mypy, which make python-deps installs)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CI

SRC = Path(__file__).resolve().parents[1] / "src"


def test_mypy_strict() -> None:
    if importlib.util.find_spec("mypy") is None:
        if CI:
            pytest.fail("mypy is missing (python3-mypy; make python-deps installs it)")
        pytest.skip("mypy is missing (python3-mypy; INSTALL_PYTHON_DEPS=1 make python-deps installs it)")
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null", str(SRC / "harnessd")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
