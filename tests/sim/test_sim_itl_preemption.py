"""ITL holds every inter-token gap, the stall of a preempted request included and no stall
before a request's first token: the gaps of the finished requests add up to their
first-to-last-token times."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.sim import Arrivals, SimConfig, simulate
from pdplan.workload.core import Workload

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


@pytest.mark.parametrize("deployment", ["2P:tp4+1D:tp4", "tp4x2"])
def test_real_cost_model_preemption_keeps_itl_and_prefill_end_exact(deployment: str) -> None:
    # Llama-3.1-70B on H100 with long outputs: requests are evicted on the decode side before
    # their first token and again before a new one (both once broke these sums)
    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.memory import plan_memory
    from pdplan.sim import build_instances, parse_deployment

    model, gpu = get_model("llama-3.1-70b"), get_gpu("h100")

    def make(role: str, lay, on):  # type: ignore[no-untyped-def]
        cm = CostModel(model, gpu, lay, "trtllm")
        return cm, int(plan_memory(model, gpu, lay).kv_capacity_tokens)

    insts = build_instances(parse_deployment(deployment), make, chunked=True)
    rng = np.random.default_rng(5)
    n = 200
    wl = Workload(
        np.clip(rng.lognormal(np.log(6000), 0.5, n), 100, 30000).astype(np.int32),
        np.clip(rng.lognormal(np.log(3000), 0.5, n), 2, 12000).astype(np.int32),
    )
    res = simulate(SimConfig(instances=insts), wl, Arrivals("poisson", 3.0))
    assert res.preemptions > 20
    t = res.request_table()
    done = t["state"] == 2
    span = float(np.sum((t["finish"] - t["first"])[done]))
    assert res.itl.mean() * res.itl.gaps == pytest.approx(span, rel=1e-6)
    assert np.all(t["pf_end"][done] <= t["first"][done])
