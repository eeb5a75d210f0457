"""Swapped-out requests come back before new prompts are prefilled (vLLM V0's scheduler), so
a closed loop does not starve them to the end of the run."""

from __future__ import annotations

import numpy as np

from pdplan.sim import Arrivals, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import aggs


def test_swapped_requests_are_not_starved_by_new_prompts() -> None:
    wl = Workload(np.full(200, 1000, np.int32), np.full(200, 2000, np.int32))
    cfg = SimConfig(instances=aggs(1, cap=20_000), preemption="swap")
    res = simulate(cfg, wl, Arrivals("closed", concurrency=32))
    t = res.request_table()
    assert res.preemptions > 0 and int(np.sum(t["state"] == 2)) == 200
    e2e = t["e2e"]
    assert e2e.max() < 2 * np.median(e2e)  # was 16x: swapped ones waited for the last prompt
