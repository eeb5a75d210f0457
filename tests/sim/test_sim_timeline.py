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


def test_kv_link_utilisation_is_bytes_over_capacity() -> None:
    from pdplan.perf.step import LinearStepModel
    from pdplan.sim import InstanceSpec
    from pdplan.workload.core import Workload

    step = LinearStepModel(base_s=0.01, per_token_s=1e-4)
    p = InstanceSpec("prefill", step, node=0, nic_bytes_per_s=1e6)
    d = InstanceSpec("decode", step, node=1, nic_bytes_per_s=1e6)
    cfg = SimConfig(instances=(p, d), kv_bytes_per_token=1000, link_latency_s=0.0)
    wl = Workload(np.full(10, 100, np.int32), np.full(10, 3, np.int32), np.arange(10) * 0.5)
    res = simulate(cfg, wl)
    moved = 10 * 100 * 1000  # B over each instance's NIC
    span = float(np.nanmax(res.columns["finish"]))  # s, the run (the last request leaves)
    for inst in res.summary()["instances"]:
        assert inst["kv_link_utilisation"] == pytest.approx(moved / (1e6 * span), rel=1e-6)


def test_the_timeline_says_when_an_instance_switches_role() -> None:
    from pdplan.sim import RoleSwitch

    cfg = SimConfig(
        instances=xpyd(2, 1),
        switches=(RoleSwitch(2.0, 1, "decode"),),
        switch_cost_s=1.0,
        sample_interval_s=0.05,
    )
    res = simulate(cfg, lengths_workload(200, seed=3), Arrivals("poisson", rate=20.0))
    tl = res.timeline_table()
    mine = tl["instance"] == 1
    states = list(dict.fromkeys(tl["state"][mine]))  # in order of first appearance
    assert states[0] == "prefill" and states[-1] == "decode" and "switching" in states
    assert set(tl["name"][mine]) == {res.summary()["instances"][1]["name"]}


@pytest.mark.parametrize(
    ("n_prefill", "switches"),
    [
        # the only decode instance serves as a prefill one for a while: prompts prefilled
        # meanwhile park (in no queue); the KV it holds for parked requests is given up when
        # it switches back, and those requests are prefilled again elsewhere
        (1, ((4.0, 1, "prefill"), (14.0, 1, "decode"))),
        (2, ((4.0, 2, "prefill"), (9.0, 2, "decode"))),
    ],
)
def test_timeline_means_match_the_summary_across_role_switches(
    n_prefill: int, switches: tuple
) -> None:
    from pdplan.sim import RoleSwitch

    sw = tuple(RoleSwitch(*s) for s in switches)
    cfg = SimConfig(
        instances=xpyd(n_prefill, 1), switches=sw, switch_cost_s=0.5, sample_interval_s=0.01
    )
    res = simulate(cfg, lengths_workload(150, seed=3), Arrivals("poisson", rate=6.0))
    assert res.preemptions > 0  # prefilled KV given up at a switch
    s, tl = res.summary(), res.timeline_table()
    for i, inst in enumerate(s["instances"]):
        mine = tl["instance"] == i
        assert tl["running"][mine].mean() == pytest.approx(inst["mean_running"], rel=0.05, abs=0.02)
        assert tl["queued"][mine].mean() == pytest.approx(inst["mean_queue"], rel=0.05, abs=0.02)
    # a restarted request's row describes its last prefill: it started after the switch that
    # gave up its KV, on the instance `p_inst` names
    c = res.columns
    again = c["preempt"] > 0
    assert (c["pf_start"][again] > switches[0][0]).all()
    assert (c["pf_end"][again] - c["pf_start"][again] < 2.0).all()


def test_kv_used_is_the_batchs_context_over_the_pool() -> None:
    # C closed-loop clients with fixed lengths on one aggregated instance: the batch holds C
    # requests nearly all the time, each with ISL + (tokens so far) of KV, so the pool's time
    # average is about C x (ISL + OSL / 2) tokens (prefill steps are short next to the decode)
    from pdplan.workload.core import Workload

    c, isl, osl, cap = 8, 200, 400, 100_000
    wl = Workload(np.full(400, isl, np.int32), np.full(400, osl, np.int32))
    cfg = SimConfig(instances=aggs(1, cap=cap), sample_interval_s=0.05)
    inst = simulate(cfg, wl, Arrivals("closed", concurrency=c)).summary()["instances"][0]
    assert inst["kv_capacity_tokens"] == cap
    assert inst["mean_kv_used"] == pytest.approx(c * (isl + osl / 2) / cap, rel=0.05)
    assert inst["peak_kv_used_sampled"] == pytest.approx(c * (isl + osl) / cap, rel=0.02)


def test_kv_used_stays_within_the_pool_when_it_preempts() -> None:
    cfg = SimConfig(instances=aggs(1, cap=8_000, chunk_budget=2048), sample_interval_s=0.05)
    res = simulate(cfg, lengths_workload(300, seed=3), Arrivals("poisson", rate=8.0))
    inst = res.summary()["instances"][0]
    assert res.preemptions > 0
    assert 0.0 < inst["mean_kv_used"] <= inst["peak_kv_used_sampled"] <= 1.0
    assert inst["peak_kv_used_sampled"] > 0.9  # it preempts because the pool is full
