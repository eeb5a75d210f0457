"""Steady-state closed-loop estimates on a transparent step model (hand-checkable)."""

from __future__ import annotations

import itertools

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.estimate import estimate_agg, estimate_disagg


def _cm(engine: str = "vllm", **eff: float) -> CostModel:
    e = get_efficiency(engine).with_(**eff)
    return CostModel(get_model("llama-3.1-8b"), get_gpu("h100-sxm"), Layout(tp=1), engine, eff=e)


def test_single_client_ttft_is_prefill_plus_overhead() -> None:
    cm = _cm(ttft_overhead_s=0.0, bench_rounds=1.0)
    est = estimate_agg(cm, 1000, 100, 1)
    # one client alone: its prompt is one chunk; TTFT = that one iteration (first round)
    assert est.ttft_s == pytest.approx(cm.prefill_time(1000, 1), rel=0.05)
    assert est.tpot_s == pytest.approx(cm.decode_step(1, 1050), rel=0.1)


def test_latency_grows_with_concurrency() -> None:
    cm = _cm()
    ests = [estimate_agg(cm, 2000, 200, c) for c in (1, 8, 64, 256)]
    assert [e.tpot_s for e in ests] == sorted(e.tpot_s for e in ests)
    assert [e.ttft_s for e in ests] == sorted(e.ttft_s for e in ests)
    assert ests[-1].throughput_rps > ests[0].throughput_rps


def test_littles_law_holds_in_the_estimate() -> None:
    est = estimate_agg(_cm(), 1000, 300, 32)
    assert est.throughput_rps * est.e2e_s == pytest.approx(32)
    assert est.e2e_s == pytest.approx(est.ttft_s + 299 * est.tpot_s)


def test_prefill_first_synchronised_rounds() -> None:
    cm = _cm("sglang", ttft_overhead_s=0.0, ttft_decode_steps=0.0, bench_rounds=1.0)
    est = estimate_agg(cm, 1024, 128, 16)
    # 16 x 1024 tokens = 2 batches of 8 prompts (8192-token budget): TTFT = mean of p8, 2*p8
    p8 = cm.prefill_time(1024, 8)
    assert est.ttft_s == pytest.approx(1.5 * p8, rel=1e-6)


def test_first_token_decode_steps_add_that_many_tpots_to_ttft() -> None:
    plain = estimate_agg(_cm("sglang", ttft_decode_steps=0.0), 1024, 128, 16)
    late = estimate_agg(_cm("sglang", ttft_decode_steps=12.0), 1024, 128, 16)
    assert late.tpot_s == pytest.approx(plain.tpot_s)
    assert late.ttft_s - plain.ttft_s == pytest.approx(12 * plain.tpot_s, rel=1e-2)


def test_kv_capacity_limits_the_batch() -> None:
    cm = _cm()
    free = estimate_agg(cm, 1000, 1000, 64)
    tight = estimate_agg(cm, 1000, 1000, 64, kv_capacity_tokens=16 * 2000)
    assert tight.kv_limited and not free.kv_limited
    assert tight.ttft_s > free.ttft_s


def test_disagg_ttft_includes_transfer() -> None:
    cm = _cm()
    a = estimate_disagg(cm, cm, 4000, 200, 8, kv_transfer_s=0.0)
    b = estimate_disagg(cm, cm, 4000, 200, 8, kv_transfer_s=0.05)
    assert b.ttft_s - a.ttft_s == pytest.approx(0.05, rel=0.05)
    assert a.tpot_s == pytest.approx(cm.decode_step(8, 4100), rel=1e-6)


def test_disagg_ttft_includes_the_engines_pd_handoff() -> None:
    a = estimate_disagg(_cm(pd_handoff_s=0.0), _cm(pd_handoff_s=0.0), 4000, 200, 8)
    b = estimate_disagg(_cm(pd_handoff_s=0.1), _cm(pd_handoff_s=0.1), 4000, 200, 8)
    assert b.ttft_s - a.ttft_s == pytest.approx(0.1, rel=0.05)
    assert b.tpot_s == pytest.approx(a.tpot_s)


def test_disagg_beyond_the_decode_pool_levels_off_instead_of_collapsing() -> None:
    cm = _cm()
    kw = {"decode_kv_capacity_tokens": 16 * 4200}  # 16 requests of 4,000 + 200 tokens fit
    ests = [estimate_disagg(cm, cm, 4000, 200, c, **kw) for c in (16, 64, 256, 1024)]
    rates = [e.throughput_rps for e in ests]
    assert all(b >= a * 0.99 for a, b in itertools.pairwise(rates))  # no collapse
    # the extra clients wait for a slot once: TTFT grows linearly in C, not as C^2
    grow = [(b.ttft_s - a.ttft_s) for a, b in itertools.pairwise(ests[1:])]
    assert grow[1] / grow[0] == pytest.approx(768 / 192, rel=0.15)
    assert ests[-1].kv_limited and ests[-1].decode_batch == 16


def test_disagg_decode_batch_is_capped_by_the_engines_max_sequences() -> None:
    cm = _cm()
    free = estimate_disagg(cm, cm, 1000, 200, 512)
    capped = estimate_disagg(cm, cm, 1000, 200, 512, decode_max_batch=128)
    assert capped.decode_batch == 128 and capped.ttft_s > free.ttft_s


def test_a_request_larger_than_the_kv_pool_is_refused_with_the_shortfall() -> None:
    from pdplan.errors import ConfigError

    with pytest.raises(ConfigError, match="short by 1,000"):
        estimate_agg(_cm(), 3000, 1000, 4, kv_capacity_tokens=3000)
    with pytest.raises(ConfigError, match="per decode instance"):
        estimate_disagg(_cm(), _cm(), 3000, 1000, 4, decode_kv_capacity_tokens=3000)


def test_disagg_single_output_token_has_no_tpot() -> None:
    est = estimate_disagg(_cm(), _cm(), 1000, 1, 8)
    assert est.tpot_s == 0.0 and est.decode_batch < 8


@pytest.mark.parametrize(
    ("engine", "kv", "gpu", "message"),
    [
        ("vllm", "int8", "h100-sxm", "vllm cannot store an int8 KV cache"),
        ("vllm", "fp4", "b200-sxm", "vllm cannot store an fp4 KV cache"),
        ("sglang", "fp4", "h100-sxm", "needs a GPU with FP4"),
        ("trtllm", "nvfp4", "h100-sxm", "needs a GPU with FP4"),
    ],
)
def test_kv_cache_dtypes_the_engine_or_gpu_cannot_store_are_refused(
    engine: str, kv: str, gpu: str, message: str
) -> None:
    from pdplan.errors import ConfigError

    model, g = get_model("llama-3.1-8b"), get_gpu(gpu)
    with pytest.raises(ConfigError, match=message):
        CostModel(model, g, Layout(tp=1), engine, kv_dtype=kv)
    CostModel(model, get_gpu("b200-sxm"), Layout(tp=1), "trtllm", kv_dtype="fp4")  # fine
    CostModel(model, g, Layout(tp=1), "trtllm", kv_dtype="int8")


def test_a_prefill_bound_disagg_pool_caps_throughput_at_what_prefill_sustains() -> None:
    cm = _cm()
    p = cm.prefill_time(1024, 8) / 8  # s per prompt, packed 8 to the 8,192-token budget
    ests = [estimate_disagg(cm, cm, 1024, 16, c, n_prefill=2) for c in (256, 1024, 4096)]
    for e in ests:  # at most 2 / p requests/s however many clients queue
        assert e.throughput_rps <= 2 / p * 1.01
        assert e.decode_batch < 256  # the decode pool runs what prefill lets through
    assert ests[-1].ttft_s > 3.5 * ests[-2].ttft_s  # the rest wait in the prefill queue


def test_one_cohort_that_fills_the_budget_returns_to_an_idle_engine() -> None:
    # 8 x 1,024 = the 8,192-token budget: all 8 prompts share one iteration, finish together
    # and come back together, so no prompt ever interleaves with their decodes
    cm = _cm()
    est = estimate_agg(cm, 1024, 16, 8, rounds=1000)
    assert est.tpot_s == pytest.approx(cm.decode_step(8, 1024 + 8), rel=0.05)
