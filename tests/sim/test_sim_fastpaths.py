"""The speed paths keep results: lazy decode joins, ITL histogram quantiles, kernel drain."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, EventLoop, InstanceSpec, SimConfig, simulate
from pdplan.sim.lazyjoin import LazyJoinMixin
from pdplan.sim.runs import RUN_PACK, RunLog, weighted_quantiles
from pdplan.workload.core import Workload

from .helpers import lengths_workload, xpyd


def test_lazy_join_gives_the_same_run_as_an_event_at_the_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = SimConfig(instances=xpyd(2, 3))
    wl, arr = lengths_workload(800, seed=5), Arrivals("poisson", rate=12)
    lazy = simulate(cfg, wl, arr)
    monkeypatch.setattr(LazyJoinMixin, "lazy_joins", False)
    plain = simulate(cfg, wl, arr)
    for col in ("first", "finish"):
        assert np.allclose(lazy.columns[col], plain.columns[col], rtol=0, atol=1e-9)
    assert lazy.summary()["itl_s"]["p99"] == pytest.approx(plain.summary()["itl_s"]["p99"])
    assert lazy.events < plain.events  # the boundary events it saves


def test_itl_quantiles_of_points_and_linear_runs() -> None:
    log = RunLog()
    for gap in (0.1, 0.2, 0.3, 0.4):
        log.add(gap, gap, 1, 1)
    p25, p50, p100 = log.quantiles([0.25, 0.5, 1.0])
    assert p25 == pytest.approx(0.1, rel=1e-3)  # histogram bins are 0.01 % wide
    assert p50 == pytest.approx(0.2, rel=1e-3)
    assert p100 == pytest.approx(0.4, rel=1e-3)
    # a run of 101 steps rising 0.010 -> 0.020 s, 3 sequences: gaps 0.0100, 0.0101, ...
    run = RunLog()
    run.add(0.010, 0.020, 101, 3)
    vals = np.linspace(0.010, 0.020, 101)
    expect = weighted_quantiles(vals, np.full(101, 3.0), [0.5, 0.9])
    # spread as a uniform density over [lo - d/2, hi + d/2]: within half a step (d = 1e-4 s)
    assert run.quantiles([0.5, 0.9]) == pytest.approx(expect, abs=5e-5)
    assert run.mean() == pytest.approx(0.015, rel=1e-6)
    assert run.gaps == 303


def test_zero_gaps_are_a_point_mass_at_zero() -> None:
    # 6 zero gaps (tokens after a speculative step's first) below 4 gaps of 0.1 s
    log = RunLog()
    log.add(0.0, 0.0, 3, 2)
    log.add(0.1, 0.1, 1, 4)
    p10, p60, p61, p100 = log.quantiles([0.1, 0.6, 0.61, 1.0])
    assert p10 == p60 == 0.0
    assert p61 == pytest.approx(0.1, rel=1e-3) and p100 == pytest.approx(0.1, rel=1e-3)
    only = RunLog()
    only.add(0.0, 0.0, 5, 1)
    assert only.quantiles([0.5, 0.99]) == [0.0, 0.0]


def test_drain_counts_every_event_including_ones_scheduled_by_handlers() -> None:
    loop = EventLoop()
    seen: list[float] = []

    def handler(x: int) -> None:
        seen.append(loop.now)
        if x == 0:
            loop.schedule(loop.now + 1.0, 0, handler, 1)

    loop.schedule(0.5, 0, handler, 0)
    loop.schedule(0.2, 0, handler, 2)
    assert loop.run() == 3
    assert seen == [0.2, 0.5, 1.5] and loop.events_run == 3


def test_prompt_that_misses_the_token_budget_starts_in_the_next_step() -> None:
    step = LinearStepModel(base_s=0.01, per_token_s=0.001)  # 80 tokens: 0.09 s
    p = InstanceSpec("prefill", step, node=0, prefill_token_budget=100)
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02), node=1)
    wl = Workload(np.array([80, 80], np.int32), np.array([2, 2], np.int32), np.zeros(2))
    res = simulate(SimConfig(instances=(p, d)), wl)
    assert list(res.columns["pf_start"]) == pytest.approx([0.0, 0.09])
    assert list(res.columns["pf_end"]) == pytest.approx([0.09, 0.18])


def test_packed_run_records_equal_pushed_tuples() -> None:
    packed, pushed = RunLog(), RunLog()
    packed.put(RUN_PACK(0.0125, 0.0131, 7, 33))  # the hot path's bytes append
    pushed.push((0.0125, 0.0131, 7, 33))
    assert packed.buf.tobytes() == pushed.buf.tobytes() and len(packed) == 1
    assert packed.gaps == 7 * 33
