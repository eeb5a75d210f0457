"""Time outside the engines (TTFT overhead, PD hand-off); unfinished requests and the SLOs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # prefill 100 tok = 0.11 s, decode 0.011 s


def _wl(n: int = 1, gap: float = 0.0) -> Workload:
    return Workload(
        np.full(n, 100, np.int32), np.full(n, 5, np.int32), np.arange(n, dtype=float) * gap
    )


def _disagg(**kw: float) -> SimConfig:
    p = InstanceSpec("prefill", STEP, node=0, nic_bytes_per_s=1e6)
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02), node=1, nic_bytes_per_s=1e6)
    return SimConfig(instances=(p, d), kv_bytes_per_token=1000, link_latency_s=0.001, **kw)


def test_handoff_delays_the_first_decode_step_by_exactly_its_time() -> None:
    base = simulate(_disagg(), _wl())
    res = simulate(_disagg(handoff_s=0.05), _wl())
    # prefill 0.11 + KV 0.1 + latency 0.001 + hand-off 0.05 + first decode step 0.02
    assert res.metric("ttft")[0] == pytest.approx(0.281)
    assert res.metric("xfer")[0] == pytest.approx(base.metric("xfer")[0])  # transfer alone
    assert res.metric("tpot")[0] == pytest.approx(base.metric("tpot")[0])
    assert res.metric("e2e")[0] == pytest.approx(base.metric("e2e")[0] + 0.05)


def test_handoff_is_a_real_delay_that_queues_a_busy_decode_instance() -> None:
    # 40 prompts at once: every one waits out its hand-off before its decode steps begin
    cfg = _disagg()
    fast = simulate(cfg, _wl(40, 0.0))
    slow = simulate(replace(cfg, handoff_s=0.2), _wl(40, 0.0))
    assert slow.summary()["duration_s"] >= fast.summary()["duration_s"]
    assert slow.metric("ttft").mean() > fast.metric("ttft").mean() + 0.19


@pytest.mark.parametrize("disagg", [False, True])
def test_ttft_overhead_delays_only_the_first_token_at_the_client(disagg: bool) -> None:
    cfg = _disagg() if disagg else SimConfig(instances=(InstanceSpec("agg", STEP),))
    wl = _wl(20, 0.03)
    base = simulate(cfg, wl)
    res = simulate(replace(cfg, ttft_overhead_s=0.04), wl)
    assert np.allclose(res.metric("ttft"), base.metric("ttft") + 0.04)
    assert np.allclose(res.request_table()["ttft"], base.request_table()["ttft"] + 0.04)
    for name in ("e2e", "tpot"):  # later tokens catch up: the engines' timeline is unchanged
        assert np.allclose(res.metric(name), base.metric(name))
    assert np.array_equal(res.columns["finish"], base.columns["finish"])
    assert res.summary()["instances"] == base.summary()["instances"]


def test_a_closed_loop_keeps_littles_law_with_the_first_token_delay() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),), ttft_overhead_s=0.2)
    s = simulate(cfg, _wl(400), Arrivals("closed", concurrency=8)).summary()
    assert s["throughput_rps"] * s["e2e_s"]["mean"] == pytest.approx(8, rel=0.03)  # X E2E = C
    assert s["ttft_s"]["p50"] > 0.2


def test_ttft_overhead_counts_against_the_ttft_slo() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),), ttft_slo_s=0.15)
    assert simulate(cfg, _wl()).attainment()[0] == 1.0  # TTFT 0.11 s
    assert simulate(replace(cfg, ttft_overhead_s=0.05), _wl()).attainment()[0] == 0.0


@pytest.mark.parametrize("disagg", [False, True])
def test_first_token_decode_steps_add_typical_steps_up_to_the_last_token(disagg: bool) -> None:
    cfg = _disagg() if disagg else SimConfig(instances=(InstanceSpec("agg", STEP),))
    wl = Workload(
        np.full(20, 100, np.int32),
        np.array([1, 5] * 10, np.int32),  # half one-token outputs: nothing left to wait for
        np.arange(20, dtype=float) * 0.03,
    )
    base = simulate(cfg, wl)
    res = simulate(replace(cfg, ttft_overhead_s=0.01, ttft_decode_steps=3.0), wl)
    t = base.request_table()
    typical = float(np.nanmedian(t["tpot"]))  # s, the run's typical decode step
    late = np.minimum(3.0 * typical, t["finish"] - t["first"])  # never past the last token
    assert late.max() > 0 and np.all(late[t["out"] == 1] == 0)
    assert np.allclose(res.request_table()["ttft"], t["ttft"] + 0.01 + late)
    assert np.allclose(res.request_table()["ttft_overhead"], 0.01 + late)
    assert np.allclose(res.metric("ttft"), base.metric("ttft") + 0.01 + late)
    assert np.array_equal(res.columns["finish"], base.columns["finish"])  # client-side only
    e2e = res.request_table()["e2e"]
    assert np.all(res.request_table()["ttft"] <= e2e + 0.01 + 1e-12)


@pytest.mark.parametrize("field", ["ttft_overhead_s", "handoff_s", "ttft_decode_steps"])
def test_negative_overheads_are_refused(field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        SimConfig(instances=(InstanceSpec("agg", STEP),), **{field: -0.01})


def test_requests_unfinished_when_the_run_stops_count_as_missing_the_slo() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),), ttft_slo_s=10.0, tpot_slo_s=10.0)
    wl = _wl(10, 0.0)  # ten prompts at once, one after another: 0.11 s of prefill each
    full = simulate(cfg, wl)
    cut = simulate(cfg, wl, until=0.5)
    assert full.attainment() == (1.0, 10)
    s = cut.summary()
    assert s["unfinished"] > 0
    assert cut.attainment()[0] == pytest.approx(s["finished"] / 10)


def test_a_switch_scheduled_past_the_end_neither_happens_nor_stretches_the_run() -> None:
    from pdplan.sim import RoleSwitch

    p = InstanceSpec("prefill", STEP, node=0, nic_bytes_per_s=1e9)
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02), node=1, nic_bytes_per_s=1e9)
    base = SimConfig(instances=(p, d, p), kv_bytes_per_token=1000)
    late = replace(base, switches=(RoleSwitch(1e9, 2, "decode"),))
    a, b = simulate(base, _wl(20, 0.05)).summary(), simulate(late, _wl(20, 0.05)).summary()
    assert b["role_switches"] == []
    assert b["little"]["L_time_avg"] == pytest.approx(a["little"]["L_time_avg"])
    assert [i["utilisation"] for i in b["instances"]] == pytest.approx(
        [i["utilisation"] for i in a["instances"]]
    )
