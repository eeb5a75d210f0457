"""The timeline counts a request whose KV has arrived as running in both modes: exact mode
holds it in `ready` until the next step boundary, event skipping joins it at once."""

from __future__ import annotations

import numpy as np

from pdplan.sim import Arrivals, SimConfig, simulate

from .helpers import lengths_workload, xpyd


def _running(exact: bool) -> np.ndarray:
    cfg = SimConfig(instances=xpyd(2, 1), sample_interval_s=0.01, exact=exact)
    res = simulate(cfg, lengths_workload(300, seed=5), Arrivals("poisson", rate=12.0))
    tl = res.timeline_table()
    return np.asarray(tl["running"][tl["instance"] == 2])  # the decode instance


def test_exact_and_event_skipping_timelines_count_the_same_running_requests() -> None:
    skip, exact = _running(False), _running(True)
    n = min(len(skip), len(exact))
    assert n > 100
    differ = int(np.count_nonzero(skip[:n] != exact[:n]))
    assert differ == 0, f"{differ} of {n} samples differ"
