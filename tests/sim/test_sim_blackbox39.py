"""Simulator, thirty-ninth (semantic) black-box pass: a recompute victim on a decode instance
is served before the transfers that queue behind it (vLLM V1 puts a preempted request back at
the head of its FCFS waiting queue; SGLang's decode resumes retracted requests first). Before,
new transfers were admitted ahead of it and it waited until arrivals stopped."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.sim import SimConfig, simulate
from pdplan.sim.state import DONE
from pdplan.workload.core import Workload

from .helpers import xpyd

N = 80  # requests: 100 in, 60 out, one every 0.04 s; the decode pool holds ~6 of them


def _victims(exact: bool) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    wl = Workload(np.full(N, 100, np.int32), np.full(N, 60, np.int32), np.arange(N) * 0.04)
    res = simulate(SimConfig(instances=xpyd(1, 1, d_cap=700), exact=exact), wl)
    c = res.columns
    assert res.preemptions > 0 and bool(np.all(c["state"] == DONE))
    return np.flatnonzero(c["preempt"] > 0), c


@pytest.mark.parametrize("exact", [False, True])
def test_decode_recompute_victim_is_not_overtaken_by_later_requests(exact: bool) -> None:
    """Every victim finishes before any request that arrived 2 s after it (50 requests on):
    it waits only for the KV of those already admitted. Before the fix the victims of the
    first seconds finished last, after ~60 later requests (request 4: done at 10.46 s of a
    10.73 s run; its 60 tokens need ~0.7 s)."""
    victims, c = _victims(exact)
    for v in victims:
        later = c["arrival"] >= c["arrival"][v] + 2.0
        if later.any():
            assert c["finish"][v] < c["finish"][later].min(), v


@pytest.mark.parametrize("exact", [False, True])
def test_decode_recompute_victims_wait_no_longer_than_the_rest(exact: bool) -> None:
    """The run is overloaded (25 req/s against ~9 served), so every request queues; a victim
    waits about as long as the others, not for all of them: mean time in the system 4.06 s
    against 4.13 s for the rest (starved: 6.96 s against 2.03 s)."""
    victims, c = _victims(exact)
    e2e = c["finish"] - c["arrival"]
    rest = np.setdiff1d(np.arange(N), victims)
    assert float(np.mean(e2e[victims])) < 1.2 * float(np.mean(e2e[rest]))
