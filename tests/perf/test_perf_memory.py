"""Memory per GPU: weights under a layout, the does-not-fit message, KV capacity."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import DoesNotFitError
from pdplan.parallel.layout import Layout
from pdplan.perf.memory import (
    GiB,
    engine_kv_memory,
    kv_bytes_per_token_per_gpu,
    plan_memory,
    weight_bytes_per_gpu,
)


def test_llama70b_bf16_on_one_h100_is_refused_with_the_shortfall() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    with pytest.raises(DoesNotFitError) as exc:
        plan_memory(m, g, Layout(tp=1), "bf16")
    msg = str(exc.value)
    assert "does not fit" in msg and "short by" in msg and "has 80 GiB" in msg
    # weights alone: 70.55e9 params * 2 B = 141.1 GB = 131.4 GiB
    assert exc.value.need_bytes / GiB > 131.0
    assert exc.value.need_bytes > exc.value.have_bytes


def test_llama70b_tp4_fits_with_a_kv_capacity() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    plan = plan_memory(m, g, Layout(tp=4), "bf16")
    # weights per GPU: 70.55e9 * 2 B / 4 = 35.3 GB = 32.8 GiB
    assert plan.weights_bytes / GiB == pytest.approx(70.55e9 * 2 / 4 / GiB, rel=0.01)
    # KV per token per GPU: 327,680 B / 4 (8 KV heads split 4 ways)
    assert plan.kv_bytes_per_token == pytest.approx(327_680 / 4)
    assert plan.kv_capacity_tokens == int(plan.kv_bytes / (327_680 / 4))
    assert 300_000 < plan.kv_capacity_tokens < 600_000


def test_kv_heads_replicate_beyond_tp_equal_kv_heads() -> None:
    m = get_model("llama-3.1-70b")  # 8 KV heads
    per8 = kv_bytes_per_token_per_gpu(m, Layout(tp=8))
    per16 = kv_bytes_per_token_per_gpu(m, Layout(tp=16))
    assert per8 == pytest.approx(327_680 / 8)
    assert per16 == per8  # TP=16 > 8 KV heads: each rank still holds one KV head


def test_mla_latent_is_replicated_across_tp() -> None:
    m = get_model("deepseek-v3")
    assert kv_bytes_per_token_per_gpu(m, Layout(tp=8)) == pytest.approx(70_272)


def test_expert_parallel_splits_experts() -> None:
    m = get_model("deepseek-v3")
    tp8 = weight_bytes_per_gpu(m, Layout(tp=8), "fp8")
    ep8 = weight_bytes_per_gpu(m, Layout(tp=8, ep=8), "fp8")
    # same GPUs either way: TP-splitting and EP-splitting the experts hold the same bytes
    assert ep8 == pytest.approx(tp8, rel=0.01)
    # fp8 DeepSeek-V3 on 8 GPUs: ~671 GB / 8 = ~84 GB per GPU (+ BF16 embeddings)
    assert 78e9 < tp8 < 90e9


def test_trtllm_sizes_kv_from_free_memory() -> None:
    """TensorRT-LLM's free_gpu_memory_fraction applies to what is left after weights, so a
    model that nearly fills the GPU keeps 90 % of the rest; a whole-device fraction leaves
    it far less."""
    m, g = get_model("deepseek-r1"), get_gpu("b200-sxm")
    lay = Layout(tp=4)
    whole = plan_memory(m, g, lay, "fp8", "fp8", mem_fraction=0.9)
    frac, of_free = engine_kv_memory("trtllm")
    free = plan_memory(m, g, lay, "fp8", "fp8", mem_fraction=frac, of_free=of_free)
    left = g.hbm_bytes - free.weights_bytes - free.activation_bytes - free.runtime_bytes
    assert of_free and free.kv_bytes == pytest.approx(0.9 * left)
    assert free.kv_bytes > 3 * whole.kv_bytes
    assert engine_kv_memory("vllm") == (0.9, False)


def test_kv_shard_per_kind_when_kv_heads_differ() -> None:
    """Gemma 4 31B: 16 KV heads on window layers split over TP8 (2 a rank), the 4 global K=V
    heads one a rank (each on 2 ranks): a rank holds 1/8 of one and 1/4 of the other."""
    m = get_model("gemma-4-31b")
    per_gpu = kv_bytes_per_token_per_gpu(m, Layout(tp=8), "bf16")
    sliding = m.kv_layer_bytes("sliding") * m.count_layers("sliding")
    full = m.kv_layer_bytes("full") * m.count_layers("full")
    assert per_gpu == pytest.approx(sliding / 8 + full / 4)
