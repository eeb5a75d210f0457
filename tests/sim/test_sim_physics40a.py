"""Hand-derived ("physics") checks of tiny runs: every expected value is worked out from the
LinearStepModel formula t = base + per_token * tokens + per_pair * pairs + per_ctx * ctx +
per_seq * seqs, the KV bytes over the link rate, and the documented definitions."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.sim.kv_shape import longest_fit
from pdplan.workload.core import Workload

AGG = LinearStepModel(
    base_s=0.01, per_token_s=1e-4, per_ctx_s=1e-6, per_seq_s=1e-3, per_pair_s=1e-8
)
PF = LinearStepModel(base_s=0.01, per_token_s=1e-4)
DEC = LinearStepModel(base_s=0.02, per_ctx_s=1e-6)


def _wl(inp: list[int], out: list[int], arr: list[float]) -> Workload:
    return Workload(np.array(inp, np.int32), np.array(out, np.int32), np.array(arr, float))


def _col(res: object, name: str) -> list[float]:
    return [float(x) for x in res.request_table()[name]]  # type: ignore[attr-defined]


# ---- sliding-window pools: the longest sequence a small pool holds ----------------------------
# W = 1000 tokens at c = 5 pool tokens each, a 400-token pool: a sequence of L < W tokens holds
# L + 5 L = 6 L, so L <= 66 fits (396) and 67 does not (402). Taking the window full
# (400 - 5,000 < 0) dropped every request.
_WIN = ((1000, 5.0),)


def test_longest_fit_below_and_past_the_window() -> None:
    assert longest_fit(400, 0, _WIN) == 66
    assert longest_fit(400, 4, _WIN) == 66  # 6 x 66 + 4 = 400
    assert longest_fit(401, 4, _WIN) == 66 and longest_fit(406, 4, _WIN) == 67
    # ceil(0.5 L): L + ceil(L / 2) <= 100 -> L = 66 (66 + 33 = 99; 67 + 34 = 101)
    assert longest_fit(100, 0, ((1000, 0.5),)) == 66
    # past the window it is cap - st - c W exactly: 7,000 - 10 - 5,000
    assert longest_fit(7000, 10, _WIN) == 1990
    assert longest_fit(7000, 10, ()) == 6990
    assert longest_fit(3, 4, _WIN) < 0  # not even the state fits


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("disagg", [False, True])
def test_a_short_request_runs_in_a_pool_smaller_than_its_window(exact: bool, disagg: bool) -> None:
    if disagg:
        insts = tuple(
            InstanceSpec(role, PF, kv_capacity_tokens=400, kv_window_tokens=_WIN, node=0)
            for role in ("prefill", "decode")
        )
    else:
        insts = (InstanceSpec("agg", PF, kv_capacity_tokens=400, kv_window_tokens=_WIN),)
    cfg = SimConfig(instances=insts, exact=exact)
    fits = simulate(cfg, _wl([56, 56], [10, 10], [0.0, 0.001])).summary()
    assert (fits["finished"], fits["dropped"], fits["preemptions"]) == (2, 0, 0)
    assert fits["instances"][0]["peak_kv_used_sampled"] <= 1.0
    big = simulate(cfg, _wl([57], [10], [0.0])).summary()
    assert big["dropped"] == 1
    (why,) = big["drop_reasons"]
    assert "(66 tokens)" in why  # was a negative capacity (-4,600 tokens)


# ---- one aggregated instance, two prompts, prefill-first vs chunked --------------------------
# A: 100 tokens at 0 s, 3 out; B: 200 tokens at 1 ms (during A's first step), 3 out.
# A's prefill: 0.01 + 1e-4 x 100 + 1e-8 x 5,050 pairs = 0.0200505 s.


def test_prefill_first_second_prompt_stalls_the_first_decode() -> None:
    res = simulate(
        SimConfig(instances=(InstanceSpec("agg", AGG),)), _wl([100, 200], [3, 3], [0, 0.001])
    )
    t_b = 0.01 + 1e-4 * 200 + 1e-8 * 20_100  # B's prefill step, 0.030201 s
    first_b = 0.0200505 + t_b
    # then both decode: 0.01 + 1e-4 x 2 + 1e-3 x 2 + 1e-6 x ctx (300, then 302)
    end = first_b + 2 * 0.0122 + 1e-6 * 602
    assert _col(res, "first") == pytest.approx([0.0200505, first_b], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([end, end], abs=1e-12)


@pytest.mark.parametrize("exact", [False, True])
def test_chunked_prefill_budget_includes_the_decode(exact: bool) -> None:
    spec = InstanceSpec("agg", AGG, chunk_budget=150)
    res = simulate(SimConfig(instances=(spec,), exact=exact), _wl([100, 200], [3, 3], [0, 0.001]))
    # step 2: A decodes (ctx 100) + B's first 149 tokens; pairs 149 x 150 / 2 = 11,175
    s2 = 0.01 + 1e-4 * 150 + 1e-8 * 11_175 + 1e-6 * 100 + 1e-3
    # step 3: A (ctx 101) + B's last 51 tokens after 149: pairs 51 x 149 + 51 x 52 / 2 = 8,925
    s3 = 0.01 + 1e-4 * 52 + 1e-8 * 8_925 + 1e-6 * 101 + 1e-3
    first_b = 0.0200505 + s2 + s3
    # B alone: two decode steps at ctx 200, 201: 0.01 + 1e-4 + 1e-3 + 1e-6 x ctx
    end_b = first_b + 2 * 0.0111 + 1e-6 * 401
    assert _col(res, "first") == pytest.approx([0.0200505, first_b], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([first_b, end_b], abs=1e-12)  # A's 3rd token


# ---- disaggregated: slot wait, transfer, hand-off, time averages --------------------------------
@pytest.mark.parametrize("exact", [False, True])
def test_decode_slot_wait_transfer_and_handoff_by_hand(exact: bool) -> None:
    """1P1D, decode max_batch 1: 100 tokens x 1 MB over a 1 GB/s NIC = 0.1 s + 1 ms latency,
    a 2 ms hand-off, decode steps 0.02 + 1e-6 ctx s (the first at ctx = prompt)."""
    p = InstanceSpec("prefill", PF, node=0, nic_bytes_per_s=1e9)
    d = InstanceSpec("decode", DEC, node=1, max_batch=1, nic_bytes_per_s=1e9)
    cfg = SimConfig(
        instances=(p, d), kv_bytes_per_token=1e6, kv_layers=10, link_latency_s=1e-3,
        handoff_s=2e-3, exact=exact,
    )  # fmt: skip
    res = simulate(cfg, _wl([100, 100], [11, 3], [0.0, 0.05]))
    first0 = 0.02 + 0.101 + 0.002 + 0.0201
    fin0 = first0 + 10 * 0.02 + 1e-6 * sum(range(101, 111))  # 0.344155
    first1 = fin0 + 0.101 + 0.002 + 0.0201  # its slot frees when request 0 leaves
    fin1 = first1 + 0.020101 + 0.020102
    assert _col(res, "first") == pytest.approx([first0, first1], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([fin0, fin1], abs=1e-12)
    assert _col(res, "slot_wait") == pytest.approx([0.0, fin0 - 0.07], abs=1e-12)
    assert _col(res, "xfer_s") == pytest.approx([0.101, 0.101], abs=1e-12)
    s = res.summary()
    dec = s["instances"][1]
    assert dec["mean_queue"] == pytest.approx((fin0 - 0.07) / fin1, rel=1e-9)
    running = (fin0 - 0.123) + (fin1 - (fin0 + 0.103))  # KV in + hand-off -> finish
    assert dec["mean_running"] == pytest.approx(running / fin1, rel=1e-9)
    assert s["decode_slot_wait_s"]["mean"] == pytest.approx((fin0 - 0.07) / 2, rel=1e-9)


# ---- SLO attainment, goodput and percentiles ----------------------------------------------------
def test_attainment_goodput_and_request_percentiles_by_hand() -> None:
    m = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_ctx_s=1e-6, per_seq_s=1e-3)
    cfg = SimConfig(instances=(InstanceSpec("agg", m),), ttft_slo_s=0.25, tpot_slo_s=0.0115)
    inp = [100, 1000, 2000, 5000, 10000]
    res = simulate(cfg, _wl(inp, [3, 3, 3, 1, 3], [0.0, 1.0, 2.0, 3.0, 4.0]))
    ttft = [0.01 + 1e-4 * n for n in inp]  # each alone: its prefill step
    tpot = [0.0111 + 1e-6 * (n + 0.5) for n in inp]  # steps of 0.0111 s + ctx n, n + 1
    s = res.summary()
    assert _col(res, "ttft") == pytest.approx(ttft, abs=1e-12)
    want = np.quantile(ttft, [0.5, 0.9, 0.99, 0.999])
    assert [s["ttft_s"][k] for k in ("p50", "p90", "p99", "p99.9")] == pytest.approx(want)
    multi = [tpot[i] for i in (0, 1, 2, 4)]  # the one-token output has no TPOT
    assert s["tpot_s"]["p90"] == pytest.approx(float(np.quantile(multi, 0.9)))
    # only request 0 meets both (TTFT 0.02 s, TPOT 0.0111005 s); request 3's TTFT is 0.51 s
    dur = 4.0 + ttft[4] + 2 * tpot[4]
    assert s["duration_s"] == pytest.approx(dur)
    assert s["slo"]["attainment"] == pytest.approx(0.2)
    assert s["goodput_rps"] == pytest.approx(1 / dur)


def test_itl_quantiles_invert_the_gap_distribution() -> None:
    """A decodes alone (0.0101 s steps), B's prefill-first step stalls it once: A's gaps
    0.0101 x 4 and 0.0302 (the 0.02 s prefill + a 0.0102 s batch-of-2 step), B's 0.0102.
    The ITL quantiles are the gaps' inverse CDF (docs/simulate-outputs.md), not numpy's
    linear interpolation (0.0202 at p90)."""
    m = LinearStepModel(base_s=0.01, per_token_s=1e-4)
    res = simulate(
        SimConfig(instances=(InstanceSpec("agg", m),)), _wl([100, 100], [6, 2], [0, 0.035])
    )
    gaps = [0.0101] * 4 + [0.0102, 0.0302]
    itl = res.summary()["itl_s"]
    assert itl["mean"] == pytest.approx(float(np.mean(gaps)), rel=1e-6)
    for k, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        assert itl[k] == pytest.approx(float(np.quantile(gaps, q, method="inverted_cdf")), rel=2e-4)
