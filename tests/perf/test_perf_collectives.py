"""Collective formulas against hand-computed values."""

from __future__ import annotations

import pytest

from pdplan.perf.collectives import all_gather_s, all_reduce_s, all_to_all_s, p2p_s


def test_ring_all_reduce() -> None:
    # 2(n-1)/n * bytes / bw: n=8, 1 GB at 100 GB/s -> 2*7/8*0.01 s = 17.5 ms, + 10 us alpha
    assert all_reduce_s(1e9, 8, 100e9, 10e-6) == pytest.approx(0.0175 + 10e-6)
    assert all_reduce_s(1e9, 1, 100e9, 10e-6) == 0.0


def test_all_gather_and_all_to_all_and_p2p() -> None:
    assert all_gather_s(1e9, 4, 100e9, 0.0) == pytest.approx(3 / 4 * 0.01)
    assert all_to_all_s(5e8, 8, 100e9, 0.0, eta=0.5) == pytest.approx(0.01)
    assert p2p_s(2e9, 100e9, 1e-3) == pytest.approx(0.021)
