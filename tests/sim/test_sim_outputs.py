"""SimResult outputs: only arrived requests, decode-slot wait vs KV transfer, files' columns."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, SimResult, simulate
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # prefill 100 tok = 0.11 s


def _wl(n: int, out: int = 5, gap_s: float = 1.0) -> Workload:
    return Workload(np.full(n, 100, np.int32), np.full(n, out, np.int32), np.arange(n) * gap_s)


def _slot_bound() -> SimResult:
    """1P1D, decode batch of one: two prompts at t=0; the second waits for the first's slot.
    Prefill 0.11 s each (one at a time), KV 1e5 B at 1e6 B/s + 1 ms latency = 0.101 s, 50
    decode steps of 0.02 s = 1 s per request."""
    p = InstanceSpec("prefill", STEP, node=0, nic_bytes_per_s=1e6, name="prefill0:tp1")
    d = InstanceSpec(
        "decode", LinearStepModel(base_s=0.02), node=1, nic_bytes_per_s=1e6, max_batch=1,
        name="decode0:tp1",
    )  # fmt: skip
    cfg = SimConfig(instances=(p, d), kv_bytes_per_token=1000, link_latency_s=0.001)
    wl = Workload(np.array([100, 100], np.int32), np.array([50, 50], np.int32), np.zeros(2))
    return simulate(cfg, wl)


def test_trace_rows_past_the_duration_are_not_results() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),))
    res = simulate(cfg, _wl(100), Arrivals("trace", duration_s=10.5))
    assert res.n_requests == 11
    assert len(res.columns["arrival"]) == 11  # not the 89 rows that never arrived
    t = res.request_table()
    assert list(t["id"]) == list(range(11)) and np.isfinite(t["arrival"]).all()


def test_request_table_leaves_out_requests_not_yet_arrived_at_until() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),))
    res = simulate(cfg, _wl(20), until=4.5)
    t = res.request_table(labels=True)
    assert list(t["id"]) == [0, 1, 2, 3, 4]
    assert set(t["state"]) <= {"done", "unfinished"}


def test_wait_for_a_decode_slot_is_not_kv_transfer() -> None:
    res = _slot_bound()
    c = res.columns
    assert np.allclose(res.metric("xfer"), 0.101)  # the wire alone, for both
    wait = res.metric("slot_wait")
    assert wait[0] == pytest.approx(0.0)
    assert wait[1] == pytest.approx(c["finish"][0] - c["pf_end"][1])  # admitted as #0 left
    assert wait[1] > 0.9
    s = res.summary()
    assert s["kv_transfer_s"]["p99"] == pytest.approx(0.101)
    assert s["decode_slot_wait_s"]["p99"] > 0.9


def test_decode_mean_queue_counts_requests_waiting_for_a_slot() -> None:
    res = _slot_bound()
    c = res.columns
    dec = res.summary()["instances"][1]
    total = float(np.nanmax(c["finish"]))  # the run ends when the last request leaves
    assert dec["mean_queue"] == pytest.approx(res.metric("slot_wait").sum() / total)
    assert dec["mean_queue"] > 0.4


def test_request_table_labels_and_client_ttft_overhead() -> None:
    p = InstanceSpec("prefill", STEP, node=0, name="prefill0:tp1")
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02), node=1, name="decode0:tp1")
    wl = _wl(3)
    wl.input_len[1] = 0  # dropped: empty prompt
    cfg = SimConfig(instances=(p, d), kv_bytes_per_token=10, ttft_overhead_s=0.011)
    res = simulate(cfg, wl)
    t = res.request_table(labels=True)
    assert list(t["state"]) == ["done", "dropped", "done"]
    assert list(t["p_inst"]) == ["prefill0:tp1", "", "prefill0:tp1"]
    assert list(t["d_inst"]) == ["decode0:tp1", "", "decode0:tp1"]
    assert np.allclose(t["ttft_overhead"], 0.011)
    ok = t["state"] == "done"
    assert np.allclose(t["ttft"][ok], (t["first"] - t["arrival"] + t["ttft_overhead"])[ok])
    codes = res.request_table()
    assert list(codes["state"]) == [2, 3, 2] and list(codes["d_inst"]) == [1, -1, 1]
    from pdplan.sim.state import STATE_NAMES

    assert STATE_NAMES[2] == "done" and STATE_NAMES[3] == "dropped"


def test_timeline_and_chrome_trace_name_the_instances() -> None:
    p = InstanceSpec("prefill", STEP, node=0, name="prefill0:tp1")
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02), node=1, name="decode0:tp1")
    cfg = SimConfig(instances=(p, d), kv_bytes_per_token=10, trace=True)
    res = simulate(cfg, _wl(5))
    tl = res.timeline_table()
    names = {0: "prefill0:tp1", 1: "decode0:tp1"}
    assert [names[int(i)] for i in tl["instance"]] == list(tl["name"])
    ev = res.chrome_trace()["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert threads == names
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in ev)
    assert {e["tid"] for e in ev if e["ph"] == "X"} == {0, 1}


def test_prefill_timeline_counts_the_prompt_being_prefilled_as_running() -> None:
    # ten prompts at t=0 on one prefill instance, one at a time (0.11 s each): during the k-th
    # prefill (k = 0..9) one is running and 9 - k are queued; sampled every 10 ms
    p = InstanceSpec("prefill", STEP, node=0, max_batch=1, prefill_token_budget=100)
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02), node=1)
    cfg = SimConfig(instances=(p, d), kv_bytes_per_token=10, sample_interval_s=0.01)
    res = simulate(
        cfg, Workload(np.full(10, 100, np.int32), np.full(10, 5, np.int32), np.zeros(10))
    )
    tl = res.timeline_table()
    on_p = tl["instance"] == 0
    t = tl["t_s"][on_p]
    assert np.allclose(np.diff(t), 0.01)  # every interval, idle or not
    k = t // 0.11  # the prefill under way at each sample (a sample at a boundary's instant,
    edge = np.abs(t - np.round(t / 0.11) * 0.11) < 1e-6  # up to float sums, is left out)
    t, k = t[~edge], k[~edge]
    on_p[np.flatnonzero(on_p)[edge]] = False
    busy = k < 10
    assert (tl["running"][on_p][busy] == 1).all() and (tl["running"][on_p][~busy] == 0).all()
    assert (tl["queued"][on_p][busy] == 9 - k[busy]).all()


def test_aggregated_rows_have_prefill_end_and_no_transfer() -> None:
    res = simulate(SimConfig(instances=(InstanceSpec("agg", STEP),)), _wl(3))
    c = res.columns
    assert np.allclose(c["pf_end"], c["first"])  # the prefill step emits the first token
    assert np.isnan(c["xfer_s"]).all()
    assert np.isnan(res.summary()["kv_transfer_s"]["p50"])  # null in --json
