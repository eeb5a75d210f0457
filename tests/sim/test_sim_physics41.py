"""Hand-derived checks of KV transfers, role-switch timing and disaggregated metrics."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, RoleSwitch, SimConfig, simulate
from pdplan.workload.core import Workload

# prefill 100 tokens: 0.01 + 0.001 x 100 = 0.11 s; used as a decode step: 0.01 + 0.001 x B
PF = LinearStepModel(base_s=0.01, per_token_s=0.001)
DEC = LinearStepModel(base_s=0.02)  # every decode step 0.02 s, whatever the batch


def _wl(inp: list[int], out: list[int], arr: list[float]) -> Workload:
    return Workload(np.array(inp, np.int32), np.array(out, np.int32), np.array(arr, float))


def _col(res: object, name: str) -> list[float]:
    return [float(x) for x in res.request_table()[name]]  # type: ignore[attr-defined]


def _spec(role: str, node: int, nic: float, step: LinearStepModel | None = None) -> InstanceSpec:
    step = step or (PF if role == "prefill" else DEC)
    return InstanceSpec(role, step, node=node, nic_bytes_per_s=nic)


# ---- two transfers into one decode NIC, the second starting mid-way -------------------------
@pytest.mark.parametrize("exact", [False, True])
def test_a_transfer_joining_mid_way_halves_both_rates(exact: bool) -> None:
    """P0 (node 0), P1 (node 2), D (node 1), one GPU each, NICs 1e6 B/s, KV 1000 B/token,
    1 ms link latency. A (100 tokens, 10 out) at 0 s -> P0; B (100, 3 out) at 0.05 s -> P1
    (P0 holds A's 100 prompt tokens). Prefills: A [0, 0.11], B [0.05, 0.16] s.
    A's 1e5 B: alone at 1e6 B/s over [0.11, 0.16] (5e4 B), then the D NIC is shared, 5e5 B/s
    each: 5e4 B / 5e5 = 0.1 s -> last byte 0.26, delivered 0.261 (xfer 0.151 s).
    B: 5e5 B/s over [0.16, 0.261] (A counts on the link during its latency, as documented):
    50,500 B; the 49,500 B left alone at 1e6 B/s: 0.0495 s -> 0.3105, delivered 0.3115
    (xfer 0.1515 s). D: A's steps from 0.261: first 0.281, ten tokens by 0.461; B joins at
    the boundary 0.321 after its KV is in: first 0.341, third token 0.381."""
    insts = (_spec("prefill", 0, 1e6), _spec("prefill", 2, 1e6), _spec("decode", 1, 1e6))
    cfg = SimConfig(
        instances=insts, kv_bytes_per_token=1000, kv_layers=10, link_latency_s=1e-3, exact=exact
    )
    res = simulate(cfg, _wl([100, 100], [10, 3], [0.0, 0.05]))
    assert list(res.columns["p_inst"]) == [0, 1]
    assert _col(res, "xfer_s") == pytest.approx([0.151, 0.1515], abs=1e-12)
    assert _col(res, "first") == pytest.approx([0.281, 0.341], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([0.461, 0.381], abs=1e-12)
    assert _col(res, "ttft") == pytest.approx([0.281, 0.291], abs=1e-12)
    # D's NIC-in carried 2e5 B of the 1e6 B/s x 0.461 s it could have
    p0, _, d = res.summary()["instances"]
    assert d["kv_link_utilisation"] == pytest.approx(2e5 / (1e6 * 0.461), rel=1e-9)
    assert p0["kv_link_utilisation"] == pytest.approx(1e5 / (1e6 * 0.461), rel=1e-9)
    # busy: P0 its 0.11 s prefill, D its steps [0.261, 0.461]; running: A on P0 for 0.11 s,
    # on D from its KV's arrival to its finish (0.2 s) and B from 0.3115 to 0.381
    assert p0["utilisation"] == pytest.approx(0.11 / 0.461, rel=1e-9)
    assert d["utilisation"] == pytest.approx(0.2 / 0.461, rel=1e-9)
    assert p0["mean_running"] == pytest.approx(0.11 / 0.461, rel=1e-9)
    assert d["mean_running"] == pytest.approx((0.2 + 0.0695) / 0.461, rel=1e-9)


# ---- layer-wise transfer on a link slower than the prefill -----------------------------------
@pytest.mark.parametrize("node", [1, 0])
def test_layerwise_body_slower_than_the_prefill_ends_at_its_own_pace(node: int) -> None:
    """Layer-wise: the KV starts moving when the prefill step starts (0 s). 100 tokens x
    1000 B = 1e5 B at 5e5 B/s (NIC, other node; NVLink set to the same rate on one node)
    takes 0.2 s > the 0.11 s prefill, so the body, not the last layer (1e4 B / 5e5 B/s =
    0.02 s after 0.11), is last: delivered 0.2 + latency (1 ms NIC, 2 ms NVLink). xfer_s counts
    from the prefill's end: 0.091 / 0.092 s. First token one 0.02 s decode step later."""
    mk = [
        InstanceSpec(r, PF if r == "prefill" else DEC, node=n, nic_bytes_per_s=5e5,
                     nvlink_bytes_per_s=5e5)
        for r, n in (("prefill", 0), ("decode", node))
    ]  # fmt: skip
    cfg = SimConfig(
        instances=tuple(mk), kv_bytes_per_token=1000, kv_layers=10, transfer_mode="layerwise",
        link_latency_s=1e-3, nvlink_latency_s=2e-3,
    )  # fmt: skip
    res = simulate(cfg, _wl([100], [2], [0.0]))
    lat = 1e-3 if node else 2e-3
    assert _col(res, "xfer_s") == pytest.approx([0.2 + lat - 0.11], abs=1e-12)
    assert _col(res, "first") == pytest.approx([0.2 + lat + 0.02], abs=1e-12)
    # a fast link: the body (1e5 B / 1e7 B/s = 0.01 s) is hidden, the last layer trails
    fast = [InstanceSpec(s.role, s.step_model, node=s.node, nic_bytes_per_s=1e7) for s in mk]
    res = simulate(
        SimConfig(instances=tuple(fast), kv_bytes_per_token=1000, kv_layers=10,
                  transfer_mode="layerwise", link_latency_s=1e-3),
        _wl([100], [2], [0.0]),
    )  # fmt: skip
    if node:  # 1e4 B / 1e7 B/s + 1 ms after the 0.11 s prefill
        assert _col(res, "xfer_s") == pytest.approx([0.001 + 0.001], abs=1e-12)


# ---- role switch: drain (prefill and its KV sent), switch cost, new role ----------------------
def test_role_switch_timing_by_hand() -> None:
    """P0 (node 0), D1 (node 1), P2 (node 2); NICs 1e9 B/s, KV 1000 B/token: 1e5 B moves in
    1e-4 s + 1 ms latency. Switch P2 -> decode at 0.05 s, cost 1 s.
    A (100, 200 out) at 0 -> P0 [0, 0.11]; KV in at 0.1111; first 0.1311 (D1's steps
    0.1111 + 0.02 k). B (100, 3 out) at 0.01 -> P2 [0.01, 0.12]: P2 drains while B
    prefills; B's KV leaves P2 by 0.1211, so P2 goes offline then and is a decode
    instance at 1.1211. C (100, 2 out) at 0.06 avoids the draining P2: it queues on P0
    behind A, [0.11, 0.22]; KV at 0.2211; D1's boundary 0.2311; first 0.2511.
    E (100, 3 out) at 2.0 -> P0 [2.0, 2.11]; paired with P2, now a decode instance holding
    nothing (D1 holds A's 300 tokens until 4.1111); KV in at 2.1111, P2's decode steps take
    its own step model, 0.01 + 0.001 x 1 = 0.011 s: first 2.1221, finish 2.1441."""
    insts = (_spec("prefill", 0, 1e9), _spec("decode", 1, 1e9), _spec("prefill", 2, 1e9))
    cfg = SimConfig(
        instances=insts, kv_bytes_per_token=1000, kv_layers=10, link_latency_s=1e-3,
        switch_cost_s=1.0, switches=(RoleSwitch(0.05, 2, "decode"),),
    )  # fmt: skip
    res = simulate(cfg, _wl([100] * 4, [200, 3, 2, 3], [0.0, 0.01, 0.06, 2.0]))
    assert [(round(t, 9), i, r) for t, i, r in res.switches] == [(1.1211, 2, "decode")]
    assert list(res.columns["p_inst"]) == [0, 2, 0, 0]
    assert list(res.columns["d_inst"]) == [1, 1, 1, 2]
    assert _col(res, "pf_start") == pytest.approx([0.0, 0.01, 0.11, 2.0], abs=1e-12)
    assert _col(res, "first") == pytest.approx([0.1311, 0.1511, 0.2511, 2.1221], abs=1e-12)
    fin = [0.1311 + 199 * 0.02, 0.1911, 0.2711, 2.1441]
    assert _col(res, "finish") == pytest.approx(fin, abs=1e-9)


@pytest.mark.parametrize("exact", [False, True])
def test_decode_to_prefill_switch_waits_for_inbound_kv_and_its_decodes(exact: bool) -> None:
    """P0, D1, D2 (nodes 0-2), NICs 1e6 B/s: 1e5 B in 0.1 s + 1 ms. A (100, 20 out) at 0 is
    prefilled [0, 0.11] and paired with D1; D1 is told to become a prefill instance at
    0.112 s, while A's KV is on the wire: it drains, taking A in at 0.211 (first 0.231) and
    decoding it to 0.231 + 19 x 0.02 = 0.611, then is offline 1 s: prefill at 1.611.
    B (100, 2 out) at 0.3 [0.3, 0.41] avoids the draining D1: D2, first 0.531.
    C, E (100, 2 out) at 2.0: C -> instance 1, prefilling with its own 0.02 s step model
    [2.0, 2.02]; E -> P0 [2.0, 2.11]; both to D2 over NICs: C alone to 2.11 (9e4 B), then
    shared (5e5 B/s): in at 2.131 (xfer 0.111); E: 10,500 B by 2.131, 89,500 B alone: in
    at 2.2215 (xfer 0.1115); D2 steps 0.02 s: C first 2.151, E (D2 idle again) 2.2415."""
    insts = (_spec("prefill", 0, 1e6), _spec("decode", 1, 1e6), _spec("decode", 2, 1e6))
    cfg = SimConfig(
        instances=insts, kv_bytes_per_token=1000, kv_layers=10, link_latency_s=1e-3,
        switch_cost_s=1.0, switches=(RoleSwitch(0.112, 1, "prefill"),), exact=exact,
    )  # fmt: skip
    res = simulate(cfg, _wl([100] * 4, [20, 2, 2, 2], [0.0, 0.3, 2.0, 2.0]))
    assert [(round(t, 9), i, r) for t, i, r in res.switches] == [(1.611, 1, "prefill")]
    assert list(res.columns["p_inst"]) == [0, 0, 1, 0]
    assert list(res.columns["d_inst"]) == [1, 2, 2, 2]
    assert _col(res, "pf_end") == pytest.approx([0.11, 0.41, 2.02, 2.11], abs=1e-12)
    assert _col(res, "xfer_s") == pytest.approx([0.101, 0.101, 0.111, 0.1115], abs=1e-12)
    assert _col(res, "first") == pytest.approx([0.231, 0.531, 2.151, 2.2415], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([0.611, 0.551, 2.171, 2.2615], abs=1e-12)


# ---- disaggregated TTFT adds up; TPOT, goodput and percentiles ---------------------------------
def test_disaggregated_ttft_parts_tpot_and_goodput_by_hand() -> None:
    """One P, one D (0.02 + 0.005 per sequence: 0.025 s alone, 0.03 s for two), NIC 1e6 B/s,
    1 ms latency. A (100, 8 out) and B (100, 4 out) both at 0: A is prefilled alone
    [0, 0.11], B queues 0.11 s, [0.11, 0.22]. Transfers 0.101 s each: A's in at 0.211,
    B's at 0.321. A alone: tokens at 0.236, 0.261, 0.286, 0.311, 0.336; B joins at 0.336:
    A's 6-8th and B's 1-3rd at 0.366, 0.396, 0.426; B's 4th alone at 0.451.
    TTFT A = 0 + 0.11 + 0.101 + 0.025 = 0.236; B = 0.11 + 0.11 + 0.101 + 0.015 wait for the
    boundary + 0.03 = 0.366. TPOT A = (0.426 - 0.236) / 7, B = (0.451 - 0.366) / 3."""
    d = InstanceSpec("decode", LinearStepModel(base_s=0.02, per_seq_s=0.005), node=1,
                     nic_bytes_per_s=1e6)  # fmt: skip
    cfg = SimConfig(
        instances=(_spec("prefill", 0, 1e6), d), kv_bytes_per_token=1000, kv_layers=10,
        link_latency_s=1e-3, ttft_slo_s=0.3, tpot_slo_s=0.028,
    )  # fmt: skip
    res = simulate(cfg, _wl([100, 100], [8, 4], [0.0, 0.0]))
    assert _col(res, "pf_start") == pytest.approx([0.0, 0.11], abs=1e-12)
    assert _col(res, "xfer_s") == pytest.approx([0.101, 0.101], abs=1e-12)
    ttft = [0.236, 0.366]
    tpot = [(0.426 - 0.236) / 7, (0.451 - 0.366) / 3]
    assert _col(res, "ttft") == pytest.approx(ttft, abs=1e-12)
    assert _col(res, "tpot") == pytest.approx(tpot, abs=1e-12)
    assert _col(res, "e2e") == pytest.approx([0.426, 0.451], abs=1e-12)
    s = res.summary()
    assert s["queue_s"]["mean"] == pytest.approx(0.055, abs=1e-12)
    assert s["ttft_s"]["p50"] == pytest.approx(0.301, abs=1e-12)  # numpy's linear p50
    # A meets both targets (0.236 <= 0.3, 0.02714 <= 0.028); B misses its TTFT
    assert s["slo"]["attainment"] == pytest.approx(0.5)
    assert s["goodput_rps"] == pytest.approx(1 / 0.451, rel=1e-9)
    # A's gaps 0.025 x 4, 0.03 x 3; B's 0.03 x 2 and 0.025: mean over the ten gaps
    assert s["itl_s"]["mean"] == pytest.approx((5 * 0.025 + 5 * 0.03) / 10, rel=1e-6)


# ---- one prefill step hands off two prompts: their transfers share both NICs from the start ----
@pytest.mark.parametrize("exact", [False, True])
def test_a_batch_handed_off_at_once_shares_the_links(exact: bool) -> None:
    """One P, one D, one GPU each, NICs 1e6 B/s, 1 ms latency. A (100) at 0 s is prefilled
    alone [0, 0.11]; B (100) and C (120) arrive at 1, 2 ms and share the next step: 0.01 +
    0.001 x 220 = 0.23 s, [0.11, 0.34]. A's KV: 0.1 s + 1 ms, in at 0.211. B's 1e5 B and
    C's 1.2e5 B start together at 0.34 on P's NIC-out and D's NIC-in: 5e5 B/s each; B's last
    byte at 0.54, in at 0.541 (xfer 0.201 s); C moved 100,500 B by then, its 19,500 B left
    alone take 0.0195 s: in at 0.5615 (xfer 0.2215 s). D (0.02 s steps): A's 2 tokens by
    0.251; B starts a step on the idle D at 0.541 (first 0.561); C joins at that boundary
    after its KV is in, 0.581: first 0.601, finish 0.621."""
    insts = (_spec("prefill", 0, 1e6), _spec("decode", 1, 1e6))
    cfg = SimConfig(
        instances=insts, kv_bytes_per_token=1000, kv_layers=10, link_latency_s=1e-3, exact=exact
    )
    res = simulate(cfg, _wl([100, 100, 120], [2] * 3, [0.0, 0.001, 0.002]))
    assert _col(res, "pf_end") == pytest.approx([0.11, 0.34, 0.34], abs=1e-12)
    assert _col(res, "xfer_s") == pytest.approx([0.101, 0.201, 0.2215], abs=1e-12)
    assert _col(res, "first") == pytest.approx([0.231, 0.561, 0.601], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([0.251, 0.581, 0.621], abs=1e-12)


# ---- a decode instance out of KV preempts: recompute there, or swap over PCIe ------------------
@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_decode_side_preemption_by_hand(mode: str, exact: bool) -> None:
    """P: 10-token prompts in 0.02 s. D: KV for 24 tokens, steps 0.01 + 0.001 x tokens
    (decode of b: 0.01 + 0.001 b), PCIe 1e6 B/s, KV 1000 B/token; KV moves in 1e-5 s, no
    latency. A (10, 6 out) at 0: in at 0.02001, tokens at 0.03101, 0.04201; B (10, 5 out)
    at 0 is prefilled [0.02, 0.04], joins at 0.04201; the batch-of-2 step ends 0.05401
    (A's 3rd token, B's 1st). KV: A 10 + 3, B 10 + 1 = 24 = full, so B (newest) is evicted;
    A's last 3 steps (0.011 s) end at 0.08701.
    recompute: B (11 KV tokens + its last token, 12) is re-prefilled on D once A has left:
    0.022 s to 0.10901 (token 2), then 3 steps: 0.14201.
    swap: out 11 x 1000 B / 1e6 B/s = 0.011 s blocking D [0.05401, 0.06501]: A ends at
    0.09801; B's swap-in, 0.011 s, then its 4 tokens: 0.09801 + 0.011 + 4 x 0.011."""
    d = InstanceSpec("decode", PF, node=1, nic_bytes_per_s=1e9, kv_capacity_tokens=24,
                     pcie_bytes_per_s=1e6)  # fmt: skip
    p = InstanceSpec("prefill", PF, node=0, nic_bytes_per_s=1e9)
    cfg = SimConfig(
        instances=(p, d), kv_bytes_per_token=1000, kv_layers=10, link_latency_s=0.0,
        preemption=mode, exact=exact,
    )  # fmt: skip
    res = simulate(cfg, _wl([10, 10], [6, 5], [0.0, 0.0]))
    assert res.preemptions == 1 and list(res.columns["preempt"]) == [0, 1]
    assert _col(res, "first") == pytest.approx([0.03101, 0.05401], abs=1e-12)
    fin = [0.08701, 0.14201] if mode == "recompute" else [0.09801, 0.09801 + 0.011 * 5]
    assert _col(res, "finish") == pytest.approx(fin, abs=1e-12)
