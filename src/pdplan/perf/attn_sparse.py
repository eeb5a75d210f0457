"""Sparse attention costs: DSA lightning indexer (DeepSeek-V3.2, GLM-5) and DeepSeek-V4
compressed attention; which attention weights stay whole on every TP rank."""

from __future__ import annotations

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import Efficiency
from pdplan.perf.hardware import Hardware
from pdplan.perf.step import BatchShape

__all__ = ["compressed_attn", "indexer_coeffs", "replicated_params", "topk_context"]


def compressed_attn(
    kind: str,
    coeffs: tuple[float, float],
    model: ModelSpec,
    lay: Layout,
    eff: Efficiency,
    hw: Hardware,
    shape: BatchShape,
) -> float:
    """DeepSeek-V4 layer: every query reads the raw window (at most `window` keys) plus the
    compressed entries before it, pairs / ratio of them; a "csa" layer reads only the
    indexer's top-k of those after scoring them all (index keys in FP8, like DSA)."""
    c = model.csa
    assert c is not None
    g = lay.dp * lay.cp
    pairs, toks = shape.prefill_pairs / g, shape.prefill_tokens / g
    ctx, seqs = shape.decode_ctx / g, shape.decode_seqs / g
    win_pairs, win_ctx = min(pairs, toks * c.window), min(ctx, seqs * c.window)
    ratio = c.ratio(kind)
    if not ratio:
        return win_pairs * coeffs[0] + win_ctx * coeffs[1]
    comp_pairs, comp_ctx = pairs / ratio, ctx / ratio
    if kind != "csa" or not c.index_topk:
        return (win_pairs + comp_pairs) * coeffs[0] + (win_ctx + comp_ctx) * coeffs[1]
    ipair, ictx = indexer_coeffs(model, lay, eff, hw)
    core_pairs, core_ctx = min(comp_pairs, toks * c.index_topk), min(comp_ctx, seqs * c.index_topk)
    core = (win_pairs + core_pairs) * coeffs[0] + (win_ctx + core_ctx) * coeffs[1]
    return core + comp_pairs * ipair + comp_ctx * ictx


def indexer_coeffs(
    model: ModelSpec, lay: Layout, eff: Efficiency, hw: Hardware
) -> tuple[float, float]:
    """(seconds per scored query-key pair in prefill, per context token in decode) of one
    layer's DSA lightning indexer on one GPU; (0, 0) without one.

    # logits: 2 * index_n_heads * index_head_dim FLOPs per (query, key) pair in FP8
    #   (DeepSeek-V3.2 report s2.1; DeepGEMM fp8_mqa_logits) at FP8 peak * attn_eta. Every
    #   attention-TP rank scores all index heads (SGLang nsa_indexer.py: replicated weights).
    # decode also reads each context token's index key: index_head_dim FP8 bytes + one fp32
    #   scale per 128-element block (SGLang NSATokenToKVPool), at HBM * attn_mem_eta.
    """
    a = model.mla or model.csa or model.index
    if a is None or not a.index_n_heads:
        return 0.0, 0.0
    flops = 2.0 * a.index_n_heads * a.index_head_dim
    peak = (hw.fp8_flops or hw.attn_flops) * eff.attn_eta
    key_bytes = a.index_head_dim * 1.0 + 4.0 * -(-a.index_head_dim // 128)
    return flops / peak, max(flops / peak, key_bytes / (hw.hbm * eff.attn_mem_eta))


def replicated_params(model: ModelSpec, kind: str) -> float:
    """Attention weights every TP rank holds whole: a DSA indexer's (SGLang nsa_indexer.py
    ReplicatedLinear); in DeepSeek-V4 also wq_a, wkv and the compressors (its reference TP
    shards only wq_b, wo_a, wo_b and the indexer's wq_b)."""
    c = model.csa
    if c is None:
        return model.indexer_params() if kind != "linear" else 0
    h, ratio = model.hidden_size, c.ratio(kind)
    rep = h * (c.q_lora_rank + c.head_dim)
    if ratio:
        rep += 2 * h * (1 + (ratio == 4)) * c.head_dim
    if kind == "csa" and c.index_n_heads:
        rep += h * c.index_n_heads + 4 * h * c.index_head_dim
    return rep


def topk_context(model: ModelSpec) -> int:
    """Tokens of context past which a sparse-attention layer stops reading more per step
    (DSA: its top-k; DeepSeek-V4 "csa": top-k entries of `ratio` tokens each); 0 = none."""
    if model.mla is not None and model.mla.index_topk:
        return model.mla.index_topk
    c = model.csa
    if c is not None and c.index_topk and "csa" in model.layer_types:
        return c.index_topk * c.csa_ratio
    if model.index is not None and "sparse" in model.layer_types:
        return model.index.index_topk
    return 0
