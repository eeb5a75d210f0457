"""ITL holds every inter-token gap, the stall of a preempted request included and no stall
before a request's first token: the gaps of the finished requests add up to their
first-to-last-token times."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.sim import Arrivals, SimConfig, simulate

from .helpers import aggs, lengths_workload, xpyd

CASES = {
    "agg_prefill_first": SimConfig(instances=aggs(2)),  # stalls, no preemption
    "agg_prefill_first_recompute": SimConfig(instances=aggs(1, cap=30_000)),
    "agg_prefill_first_swap": SimConfig(instances=aggs(1, cap=30_000), preemption="swap"),
    "agg_recompute": SimConfig(instances=aggs(1, cap=30_000, chunk_budget=2048)),
    "agg_swap": SimConfig(instances=aggs(1, cap=30_000, chunk_budget=2048), preemption="swap"),
    "pd_recompute": SimConfig(instances=xpyd(2, 2, d_cap=10_000)),
    "pd_swap": SimConfig(instances=xpyd(2, 2, d_cap=10_000), preemption="swap"),
}


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_itl_gaps_add_up_to_each_requests_decode_time(name: str, exact: bool) -> None:
    res = simulate(
        replace(CASES[name], exact=exact), lengths_workload(600, seed=11), Arrivals("poisson", 10)
    )
    assert res.preemptions > 0 or name == "agg_prefill_first"
    t = res.request_table()
    done = t["state"] == 2
    span = float(np.sum((t["finish"] - t["first"])[done]))  # s, first -> last token
    assert res.itl.gaps == pytest.approx(float(np.sum(t["out"][done] - 1)))
    assert res.itl.mean() * res.itl.gaps == pytest.approx(span, rel=1e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recompute_after_the_first_token_keeps_the_first_prefills_end(name: str) -> None:
    res = simulate(CASES[name], lengths_workload(600, seed=11), Arrivals("poisson", 10))
    t = res.request_table()
    done = t["state"] == 2
    assert np.all(t["pf_end"][done] <= t["first"][done])  # the prompt ends before its first token
