"""Synthetic traces, thirty-seventh black-box pass: step rate curves and byte-identical
gzip'd outputs for the same seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pdplan.workload import synthesize, write_workload
from pdplan.workload.synth import parse_rate_curve


def test_a_time_given_twice_is_a_step_down_as_well_as_up() -> None:
    """Sorting (t, m) pairs put the step's 1 before its 3: a ramp down, then back to 3."""
    t = np.array([0.0, 1800.0, 3599.0, 3601.0, 7200.0])
    down = parse_rate_curve("points:0=3,1h=3,1h=1")
    up = parse_rate_curve("points:0=1,1h=1,1h=3")
    assert down is not None and up is not None
    assert down(t).tolist() == [3.0, 3.0, 3.0, 1.0, 1.0]
    assert up(t).tolist() == [1.0, 1.0, 1.0, 3.0, 3.0]


def test_points_given_out_of_order_are_sorted_by_time() -> None:
    c = parse_rate_curve("points:2h=1,0=4,1h=2")
    assert c is not None and [p[0] for p in c.points] == [0.0, 3600.0, 7200.0]


def test_the_same_trace_gzipd_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    """The gzip header held the clock (mtime): two runs of one synth seed differed."""
    w = synthesize(n=50, rate=2.0, seed=3)
    for name in ("t.csv.gz", "t.jsonl.gz"):
        a, b = tmp_path / "a", tmp_path / "b"
        a.mkdir(exist_ok=True), b.mkdir(exist_ok=True)
        write_workload(w, a / name)
        write_workload(w, b / name)
        data = (a / name).read_bytes()
        assert data[4:8] == b"\0\0\0\0"  # gzip MTIME field (RFC 1952): 0, no timestamp
        assert data == (b / name).read_bytes()
