"""Closed-loop queueing formulas: decode-slot wait and the prefill pool's M/D/1 fixed point."""

from __future__ import annotations

import pytest

from pdplan.perf.closed_loop import MAX_UTIL, prefill_queue_ttft, slot_wait


def test_slot_wait_is_zero_with_room_and_littles_law_without() -> None:
    assert slot_wait(8, 8, 2.0) == 0.0
    # 12 clients, 8 slots, each held 2 s: the 4 extra wait 4 * 2 / 8 = 1 s
    assert slot_wait(12, 8, 2.0) == pytest.approx(1.0)


def test_prefill_queue_fixed_point_satisfies_pollaczek_khinchine() -> None:
    p1, fixed, c, osl, t_dec = 0.1, 0.05, 16, 200, 0.02
    ttft, util = prefill_queue_ttft(p1, p1, fixed, c, 1, osl, t_dec, 0.0)
    x = c / (ttft + (osl - 1) * t_dec)  # req/s, the clients' cycle
    assert util == pytest.approx(x * p1, rel=1e-6)
    assert ttft == pytest.approx(util * p1 / (2 * (1 - util)) + p1 + fixed, rel=1e-6)


def test_prefill_queue_light_load_is_the_bare_prefill_and_heavy_load_is_capped() -> None:
    ttft, util = prefill_queue_ttft(0.01, 0.01, 0.0, 1, 1, 1000, 0.02, 0.0)
    assert util < 0.001 and ttft == pytest.approx(0.01, rel=1e-3)
    _, util = prefill_queue_ttft(1.0, 1.0, 0.0, 1000, 1, 10, 0.01, 0.0)
    assert util == MAX_UTIL
