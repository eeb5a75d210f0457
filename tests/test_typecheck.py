"""`mypy src` (pyproject's [tool.mypy]) reports no errors: the type hints stay checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# mypy.api.run in a child that leaves with os._exit, as mypy's own CLI does: freeing mypy's
# state at interpreter shutdown takes seconds (~5 s cold run, then ~5 s more to exit)
_RUN = (
    "import os, sys\n"
    "from mypy import api\n"
    "out, err, status = api.run(['src'])\n"
    "sys.stdout.write(out + err)\n"
    "sys.stdout.flush()\n"
    "os._exit(status)\n"
)


def test_mypy_src_is_clean() -> None:
    pytest.importorskip("mypy.api", reason="mypy is not installed (pip install -e .[test])")
    # from the repo root: pyproject.toml's [tool.mypy] and the cache in .mypy_cache
    got = subprocess.run(
        [sys.executable, "-c", _RUN], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert got.returncode == 0, f"mypy src found errors:\n{got.stdout}{got.stderr}"
