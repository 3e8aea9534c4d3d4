"""pip installs the package: into a fresh virtual environment (with the
system's site-packages, where Debian's python3-websockets is), offline,
with the setuptools Debian ships (--no-build-isolation: with build
isolation pip would fetch setuptools and wheel from an index)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CI

PKG = Path(__file__).resolve().parents[1]


def test_pip_install(tmp_path: Path) -> None:
    try:
        import setuptools  # noqa: F401
    except ImportError:
        if CI:
            pytest.fail("setuptools is missing (python3-setuptools)")
        pytest.skip("setuptools is missing (python3-setuptools)")
    src = tmp_path / "python"
    # A copy: pip builds in the tree (build/, *.egg-info).
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", "bench"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--no-build-isolation", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # Imported from the environment, not the source tree.
    r = subprocess.run([str(py), "-c", "import harnessd, harnessd.convert; print(harnessd.__file__); print(harnessd.__version__)"],
                       capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    where, version = r.stdout.split()
    assert where.startswith(str(venv)) and version == "0.1.0"
    # py.typed ships, so type checkers read the hints.
    assert (Path(where).parent / "py.typed").exists()
