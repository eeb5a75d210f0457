"""Hybrid models' per-sequence recurrent state competes with the KV cache for memory."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.kv_state import state_bytes_per_seq_per_gpu, state_tokens
from pdplan.perf.memory import plan_memory
from pdplan.plan.ratio import decode_point, ratio_from_model

HYBRID = "nemotron-h-56b"  # 54 Mamba2 layers beside 10 attention layers


def test_pure_attention_models_hold_no_state() -> None:
    m = get_model("llama-3.1-70b")
    assert state_bytes_per_seq_per_gpu(m, Layout(tp=4)) == 0.0
    mem = plan_memory(m, get_gpu("h200"), Layout(tp=4), context=4096)
    assert mem.state_tokens_per_seq == 0
    assert mem.pool_tokens == mem.kv_capacity_tokens  # nothing folded in


def test_state_splits_over_tp_and_pp_stages() -> None:
    m = get_model(HYBRID)
    full = m.linear_state_bytes()
    assert full > 0
    assert state_bytes_per_seq_per_gpu(m, Layout(tp=1)) == pytest.approx(full)
    assert state_bytes_per_seq_per_gpu(m, Layout(tp=4)) == pytest.approx(full / 4)
    n = m.count_layers("linear")
    # the heaviest of 2 stages holds ceil(n / 2) of the n state layers
    assert state_bytes_per_seq_per_gpu(m, Layout(tp=1, pp=2)) == pytest.approx(
        full * -(-n // 2) / n
    )


def test_state_tokens_round_up() -> None:
    assert state_tokens(1000.0, 300.0) == 4
    assert state_tokens(0.0, 300.0) == 0
    assert state_tokens(900.0, 300.0) == 3


def test_capacity_at_a_context_counts_each_sequence_state() -> None:
    """At `context`, sequences that fit = KV bytes / (context x B/token + state B)."""
    m, g, lay, ctx = get_model(HYBRID), get_gpu("h100"), Layout(tp=4), 4096
    mem = plan_memory(m, g, lay, context=ctx)
    per_seq = ctx * mem.kv_bytes_per_token + mem.state_bytes_per_seq  # B per GPU
    want = int(mem.kv_bytes // per_seq)
    assert abs(mem.kv_capacity_tokens // ctx - want) <= 1
    # without counting the state, nearly 4x as many would be claimed
    assert mem.pool_tokens // ctx > 3 * want
    raw = plan_memory(m, g, lay)  # no context: the raw pool, the state told apart
    assert raw.kv_capacity_tokens == raw.pool_tokens
    assert abs(raw.sequences_held(ctx) - want) <= 1
    assert raw.to_dict()["state_tokens_per_seq"] == raw.state_tokens_per_seq > ctx


def test_decode_point_charges_state_per_sequence() -> None:
    def step(b: int, ctx: float) -> float:
        return 0.001  # s: always within the TPOT, so the KV pool sets the batch

    b, _, limit = decode_point(step, 0.05, 1000.0, 100_000.0, 4096)
    assert (b, limit) == (100, "kv")
    b, _, limit = decode_point(step, 0.05, 1000.0, 100_000.0, 4096, state_tokens_per_seq=1500)
    assert (b, limit) == (40, "kv")  # 100k // (1000 + 1500)
    with pytest.raises(ConfigError, match="recurrent state"):
        decode_point(step, 0.05, 1000.0, 2000.0, 4096, state_tokens_per_seq=1500)


def test_ratio_decode_batch_shrinks_with_state() -> None:
    def pre(n: float) -> float:
        return n * 1e-5  # s per prompt

    def dec(b: int, ctx: float) -> float:
        return 0.001 + 1e-5 * b

    kw = dict(isl=1000.0, osl=200.0, tpot=0.05, kv_capacity_tokens=110_000.0,
              prefill_gpus=1, decode_gpus=1)  # fmt: skip
    plain = ratio_from_model(pre, dec, **kw)  # type: ignore[arg-type]
    held = ratio_from_model(pre, dec, state_tokens_per_seq=1100.0, **kw)  # type: ignore[arg-type]
    assert plain.decode_batch == 100  # 110k // 1100-token mean context
    assert held.decode_batch == 50  # 110k // (1100 + 1100)
    assert held.instance_ratio < plain.instance_ratio  # decode costs more per request: more D


def test_decode_state_traffic_uses_the_state_dtype() -> None:
    """A decode step reads and writes each sequence's state in its own dtype: a BF16 Mamba
    state (Nemotron-H, no mamba_ssm_cache_dtype) moves half the bytes of an FP32 one."""
    from dataclasses import replace

    from pdplan.perf.efficiency import get_efficiency
    from pdplan.perf.hardware import Hardware
    from pdplan.perf.linear_attn import linear_attn_time
    from pdplan.perf.step import BatchShape

    m = get_model(HYBRID)
    assert m.linear_attn is not None and m.linear_attn.state_bytes == 2.0
    fp32 = replace(m, linear_attn=replace(m.linear_attn, state_bytes=4.0))
    # compute far faster than memory, so the state traffic alone sets the time
    hw = Hardware(gemm_flops=1e30, moe_flops=1e30, attn_flops=1e30, hbm=1e12, wb=2, mb=2, kvb=2)
    eff, lay, shape = get_efficiency("vllm"), Layout(tp=1), BatchShape(decode_seqs=64)
    t16 = linear_attn_time(m, shape, lay, eff, hw)
    assert t16 > 0
    assert linear_attn_time(fp32, shape, lay, eff, hw) == pytest.approx(2 * t16)
