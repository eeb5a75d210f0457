"""The tree stays ruff-clean (lint and format), as the developers' guide asks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed (test extra)")
def test_ruff_check() -> None:
    r = _ruff("check", "src", "tests", "benchmarks")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed (test extra)")
def test_ruff_format() -> None:
    r = _ruff("format", "--check", "src", "tests", "benchmarks")
    assert r.returncode == 0, r.stdout + r.stderr
