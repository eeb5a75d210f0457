"""Shared fixtures for workload tests: the shared trace folder (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "data" / "traces"


@pytest.fixture
def traces() -> Path:
    if not TRACES.is_dir():
        pytest.skip("shared trace data not available")
    return TRACES
