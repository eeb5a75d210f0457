"""Event kernel ordering, run(until), and the closed-form step count of a decode run."""

from __future__ import annotations

import pytest

from pdplan.sim import EventLoop, SimulationError
from pdplan.sim.engine import steps_within


def test_heap_orders_by_time_then_priority_then_sequence() -> None:
    loop = EventLoop()
    seen: list[str] = []
    loop.schedule(2.0, 0, seen.append, "late")
    loop.schedule(1.0, 2, seen.append, "prio2")
    loop.schedule(1.0, 0, seen.append, "prio0-a")
    loop.schedule(1.0, 0, seen.append, "prio0-b")
    assert loop.run() == 4
    assert seen == ["prio0-a", "prio0-b", "prio2", "late"]
    assert loop.now == 2.0


def test_step_and_run_until() -> None:
    loop = EventLoop()
    seen: list[int] = []
    for t in (1.0, 2.0, 3.0):
        loop.schedule(t, 0, seen.append, int(t))
    assert loop.step() and seen == [1]
    loop.run(until=2.5)
    assert seen == [1, 2] and loop.now == 2.5
    assert loop.peek_time() == 3.0
    loop.run()
    assert not loop.step()


def test_past_event_is_a_named_error() -> None:
    loop = EventLoop()
    loop.schedule(1.0, 0, lambda _: None, None)
    loop.run()
    with pytest.raises(SimulationError, match="before now"):
        loop.schedule(0.5, 0, lambda _: None, None)


def test_steps_within_matches_summing_steps() -> None:
    # step k takes a + c*(C0 + k*B) with a=0.01, c=1e-6, C0=5000, B=10
    a, c, c0, b = 0.01, 1e-6, 5000, 10
    durs, t = [], 0.0
    for k in range(200):
        t += a + c * (c0 + k * b)
        durs.append(t)
    for dt in (0.0, 0.0149, 0.0151, 0.5, durs[57] - 1e-9, durs[57] + 1e-9, durs[199] + 1e-9):
        expect = sum(1 for x in durs if x <= dt + 1e-15)
        assert steps_within(dt, a, c * b, c * c0) == expect
    assert steps_within(0.1, 0.02, 0.0, 0.0) == 5  # constant steps: floor(dt / a)
