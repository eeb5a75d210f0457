"""The timeline samples every instance at regular instants, so its means agree with the
summary's exact time averages (samples taken at step decisions caught the batch just after a
finish: 1 running against 1.9 on average)."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.sim import Arrivals, SimConfig, simulate

from .helpers import aggs, lengths_workload, xpyd


@pytest.mark.parametrize(
    "instances",
    [
        xpyd(1, 1, max_batch=2),
        xpyd(2, 1, d_cap=8_000),  # decode-side recompute preemption
        aggs(1, cap=8_000, chunk_budget=2048),  # aggregated preemption
    ],
)
def test_timeline_means_match_the_summarys_time_averages(instances: tuple) -> None:
    # a preempted request out of the batch is waiting in both (the summary counted it running)
    cfg = SimConfig(instances=instances, sample_interval_s=0.05)
    res = simulate(cfg, lengths_workload(300, seed=3), Arrivals("poisson", rate=8.0))
    assert res.preemptions > 0 or instances[0].kv_capacity_tokens > 8_000
    s, tl = res.summary(), res.timeline_table()
    for i, inst in enumerate(s["instances"]):
        mine = tl["instance"] == i
        assert np.allclose(np.diff(tl["t_s"][mine]), 0.05)
        assert tl["running"][mine].mean() == pytest.approx(inst["mean_running"], rel=0.05, abs=0.02)
        assert tl["queued"][mine].mean() == pytest.approx(inst["mean_queue"], rel=0.05, abs=0.02)
