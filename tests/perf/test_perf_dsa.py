"""DeepSeek Sparse Attention (GLM-5, DeepSeek-V3.2) in the cost model: top-k core, indexer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.parallel.layout import Layout
from pdplan.perf import layer_costs as lc
from pdplan.perf.costmodel import CostModel
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.step import BatchShape, causal_pairs
from pdplan.plan.accuracy import kv_dtype_for

CONFIGS = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "reference" / "hf_configs"
)


def _dense(model):  # the same model with its indexer removed: dense MLA
    mla = dataclasses.replace(model.mla, index_n_heads=0, index_head_dim=0, index_topk=0)
    return dataclasses.replace(model, mla=mla)


@pytest.fixture(scope="module")
def glm():
    return get_model("glm-5")


def _cm(model, engine: str = "sglang") -> CostModel:
    return CostModel(model, get_gpu("b200-sxm"), Layout(tp=8), engine, "fp8", "fp8")


def test_preset_carries_top_k(glm) -> None:
    assert glm.mla.index_topk == 2048 and glm.mla.index_n_heads == 32
    assert get_model("deepseek-v3").mla.index_topk == 0  # dense MLA


def test_hf_config_reads_top_k() -> None:
    path = CONFIGS / "deepseek-ai--DeepSeek-V3.2_config.json"
    if not path.exists():
        pytest.skip("shared data not present")
    m = model_from_hf_config(path)
    assert m.mla.index_topk == 2048 and m.indexer_params() > 0


def test_indexer_params_are_replicated_not_tp_split(glm) -> None:
    # wq_b 2048 x 32*128 + wk 6144 x 128 + weights_proj 6144 x 32 per layer
    assert glm.indexer_params() == 2048 * 32 * 128 + 6144 * (128 + 32)
    assert _dense(glm).indexer_params() == 0


def test_long_context_decode_reads_only_top_k(glm) -> None:
    """Past top-k, the MLA core stops growing; only the indexer's key read does."""
    cm, dense = _cm(glm), _cm(_dense(glm))
    b = 16
    short, long = 2_000, 64_000
    grow_dsa = cm.decode_step(b, long) - cm.decode_step(b, short)
    grow_dense = dense.decode_step(b, long) - dense.decode_step(b, short)
    assert 0 < grow_dsa < 0.5 * grow_dense
    # the indexer part: one FP8 key (128 B + a 4 B scale) per context token per layer
    a = glm.mla
    per_ctx = lc.indexer_coeffs(glm, cm.layout, cm.eff, cm._hw)[1]
    assert per_ctx == pytest.approx(
        max(
            2 * a.index_n_heads * a.index_head_dim / (4500e12 * cm.eff.attn_eta),
            132 / (7.7e12 * cm.eff.attn_mem_eta),
        )
    )


def test_short_decode_pays_the_indexer_kernels(glm) -> None:
    cm, dense = _cm(glm), _cm(_dense(glm))
    extra = cm.decode_step(4, 1_000) - dense.decode_step(4, 1_000)
    kernels = cm.eff.kernel_s * cm.eff.indexer_kernels * glm.num_layers
    assert extra >= kernels


def test_short_prompt_skips_the_logits(glm) -> None:
    """A prompt no longer than top-k skips the indexer's scoring (SGLang fast path); a long
    one scores every causal pair but attends only top-k keys per query."""
    cm, dense = _cm(glm), _cm(_dense(glm))
    s1k = BatchShape(1024, causal_pairs(1024), 1)
    a_dsa = cm.breakdown(s1k).attention
    assert a_dsa == pytest.approx(dense.breakdown(s1k).attention)
    s16k = BatchShape(16384, causal_pairs(16384), 1)
    pair_core = lc.attn_coeffs(glm, "full", cm.layout, cm.eff, cm._hw)[0]
    ipair = lc.indexer_coeffs(glm, cm.layout, cm.eff, cm._hw)[0]
    core_pairs = min(causal_pairs(16384), 16384 * 2048)
    want = glm.num_layers * (core_pairs * pair_core + causal_pairs(16384) * ipair)
    assert cm.breakdown(s16k).attention == pytest.approx(want)


def _row(backend: str, system: str, model: str) -> MeasuredRow:
    return MeasuredRow(
        line=2, row_id="r", backend=backend, version="", model_path=model, system=system,
        mode="agg", isl=1024, osl=1024, weight_dtype="fp8", moe_dtype="fp8", concurrency=4,
        layout=Layout(tp=8), prefill_layout=None, decode_layout=None, prefill_workers=0,
        decode_workers=0, prefill_batch=None, decode_batch=None, ttft_ms=100.0, tpot_ms=10.0,
    )  # fmt: skip


def test_sglang_dsa_kv_is_fp8_on_blackwell_only() -> None:
    assert kv_dtype_for(_row("sglang", "b200_sxm", "zai-org/GLM-5")) == "fp8"
    assert kv_dtype_for(_row("sglang", "h200_sxm", "zai-org/GLM-5")) == "bf16"
    assert kv_dtype_for(_row("sglang", "b200_sxm", "deepseek-ai/DeepSeek-R1")) == "bf16"
    assert kv_dtype_for(_row("vllm", "b200_sxm", "zai-org/GLM-5")) == "bf16"


def test_index_key_is_cached_in_fp8_whatever_the_kv_dtype(glm) -> None:
    # latent 512 + rope 64 in the KV dtype; index key 128 B FP8 + one 4 B fp32 scale
    assert glm.kv_layer_bytes("full", "bf16") == 576 * 2 + 132
    assert glm.kv_layer_bytes("full", "fp8") == 576 + 132
    assert glm.kv_bytes_per_token("bf16") == glm.num_layers * (576 * 2 + 132)
    dense = _dense(glm)
    assert dense.kv_layer_bytes("full", "bf16") == 576 * 2
