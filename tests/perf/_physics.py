"""Physical lower bounds of a step from the model's shape and the GPU's datasheet peaks only
(never CostModel internals or efficiencies), for tests/perf/test_physical_bounds.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from pdplan.catalog.model_spec import ModelSpec, dtype_bytes
from pdplan.perf.costmodel import CostModel


@dataclass(frozen=True)
class PerGPU:
    """Work of one step averaged over the instance's GPUs: the busiest GPU does at least this
    much, and the step lasts at least as long as its busiest GPU needs."""

    weight_bytes: float  # B
    kv_bytes: float  # B
    gemm_flops: float  # FLOP at the weights' dtype
    moe_flops: float  # FLOP at the routed experts' dtype
    attn_flops: float  # FLOP of the attention core (QK^T and PV), at the KV dtype's peak


def _embedding_params(m: ModelSpec) -> float:
    # token embedding + untied LM head, params (ModelSpec._params counts both in active_params)
    return m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)


def _expert_params(m: ModelSpec) -> float:
    # one routed expert: ffn_mats (gate, up, down) x expert input width x expert FFN width
    moe = m.moe
    assert moe is not None
    return m.ffn_mats * moe.expert_dim(m.hidden_size) * moe.expert_intermediate_size


@cache
def _weight_params(m: ModelSpec, tp: int, dp: int) -> tuple[float, float, float]:
    """(attention-projection params one GPU holds, other non-routed params one GPU holds,
    params of the top-k routed experts of the whole model), each summed over ALL layers, before
    the PP split. Attention projections split TP-ways (DP attention replicates them in each DP
    group: that is what the layout means); dense FFN, shared experts, latent projections and the
    router (h x E) are counted split over all tp * dp GPUs of a stage (the weakest case)."""
    width = tp * dp
    attn = other = routed = 0.0
    for i, kind in enumerate(m.layer_types):
        attn += m.attn_params(kind) / tp
        ffn = m.ffn_kind(i)
        if ffn == "dense":
            other += m.dense_ffn_params() / width
        elif ffn == "moe":
            moe = m.moe
            assert moe is not None
            h = m.hidden_size
            shared = moe.num_shared_experts * m.ffn_mats * h * moe.shared_intermediate_size
            other += (shared + 2 * h * moe.latent_size + h * moe.num_experts) / width
            # every token picks top-k distinct experts: at least k experts are read per layer
            routed += moe.experts_per_token * _expert_params(m)
    return attn, other, routed


@cache
def _active_matmul_params(m: ModelSpec) -> float:
    # weights one token multiplies, params: active_params less the embedding lookups / LM head
    return m.active_params - _embedding_params(m)


@cache
def _kv_read_per_seq(m: ModelSpec, tp: int, ctx: int, kv_dtype: str) -> float:
    """KV (or recurrent-state) bytes one TP rank reads for one decoding sequence of `ctx`
    tokens, summed over all layers (before the PP split), B.

    GQA: a TP rank reads max(1, n_kv / tp) KV heads (its query heads need their group's KV head,
      so KV heads replicate when tp > n_kv), kv_width (K and V) elements each per token;
      sliding layers read min(ctx, window) tokens.
    MLA: every head attends to the shared latent, so every TP rank reads all of it:
      kv_lora_rank + qk_rope_head_dim elements per token (DeepSeek-V2 s2.1); with a DSA indexer
      the core reads only min(ctx, index_topk) of them, plus the indexer's FP8 key of every
      token (index_head_dim B + one fp32 scale per 128, ModelSpec.kv_layer_bytes), counted
      TP-split (the weakest case).
    Linear attention / SSM: the recurrent state, Hv * dk * dv elements of
      LinearAttnSpec.state_bytes (from the config) each, TP-split by value heads; read once
      (the write-back is not counted). The conv state is left out.
    """
    kvb = dtype_bytes(kv_dtype)  # B per KV element
    total = 0.0
    for kind in m.layer_types:
        if kind == "none":
            continue
        if kind == "linear":
            la = m.linear_attn
            assert la is not None
            state = la.num_value_heads * la.key_head_dim * la.value_head_dim * la.state_bytes
            total += state / tp
            continue
        if m.mla is not None:
            a = m.mla
            n = min(ctx, a.index_topk) if a.index_topk else ctx
            total += n * (a.kv_lora_rank + a.qk_rope_head_dim) * kvb
            if a.index_head_dim:
                d = a.index_head_dim
                total += ctx * (d + 4.0 * math.ceil(d / 128)) / tp
            continue
        assert kind in ("full", "sliding"), kind  # csa / hca / sparse models are not swept
        g = m.geom(kind)
        n = min(ctx, m.sliding_window) if (kind == "sliding" and m.sliding_window) else ctx
        total += n * max(1.0, g.num_kv_heads / tp) * g.kv_width * kvb
    return total


def _attn_flops_per_pair(m: ModelSpec, kind: str) -> float:
    """FLOPs of one (query, key) pair in one attention layer, all heads: QK^T over the q/k head
    width and PV over the value width, 2 FLOP per MAC. MLA counts the un-absorbed MHA widths
    (qk_head_dim + v_head_dim), the smaller of its two forms (the absorbed form attends over
    the 512-wide latent); linear mixers count 0 (the weakest case)."""
    if kind in ("none", "linear"):
        return 0.0
    if m.mla is not None:
        return 2.0 * m.num_heads * (m.mla.qk_head_dim + m.mla.v_head_dim)
    g = m.geom(kind)
    return 2.0 * g.num_heads * (g.head_dim + g.v_head_dim)


def _keys_per_query(m: ModelSpec, kind: str, ctx: int) -> int:
    """Keys one query at context `ctx` attends to, capped by a sliding window or a DSA top-k."""
    if kind == "sliding" and m.sliding_window:
        return min(ctx, m.sliding_window)
    if m.mla is not None and m.mla.index_topk:
        return min(ctx, m.mla.index_topk)
    return ctx


@cache
def _attn_flops(m: ModelSpec, queries_ctx: tuple[int, ...]) -> float:
    """Attention-core FLOPs, all layers, of one query at each context in `queries_ctx`."""
    total = 0.0
    for kind in set(m.layer_types):
        per_pair = _attn_flops_per_pair(m, kind) * m.count_layers(kind)
        if per_pair:
            total += per_pair * sum(_keys_per_query(m, kind, c) for c in queries_ctx)
    return total


@cache
def _prefill_attn_flops(m: ModelSpec, isl: int) -> float:
    """Causal attention FLOPs of one `isl`-token prompt, all layers: token j (1-based) attends
    to min(j, cap) keys, and sum_{j=1..isl} min(j, cap) = cap (cap + 1) / 2 + (isl - cap) cap."""
    total = 0.0
    for kind in set(m.layer_types):
        per_pair = _attn_flops_per_pair(m, kind) * m.count_layers(kind)
        if per_pair:
            cap = _keys_per_query(m, kind, isl)
            total += per_pair * (cap * (cap + 1) / 2 + (isl - cap) * cap)
    return total


def weight_bytes(cm: CostModel, weight_dtype: str | None = None) -> float:
    """Weight bytes one GPU streams in a step that touches the fewest experts, averaged over
    the pp stages (GPUs = tp * dp * pp; cp = 1 in the sweep). Element sizes: dtype_bytes (B per
    element incl. block scales, catalog/model_parts.py); the LM head is BF16 (2 B) in every
    engine and vocab-parallel over TP. `weight_dtype` overrides the attention projections'."""
    m, lay = cm.model, cm.layout
    attn, other, routed = _weight_params(m, lay.tp, lay.dp)
    wb, mb = dtype_bytes(cm.weight_dtype), dtype_bytes(cm.moe_dtype)
    ab = dtype_bytes(weight_dtype) if weight_dtype else wb
    lm_head = m.vocab_size * m.hidden_size * 2.0 / lay.tp
    # routed experts spread over the tp * dp GPUs of a stage (moe_tp x ep)
    return (attn * ab + other * wb + routed * mb / (lay.tp * lay.dp) + lm_head) / lay.pp


def decode_work(cm: CostModel, batch: int, ctx: int) -> PerGPU:
    """Per-GPU work of one decode step of `batch` sequences of `ctx` context each. Needs
    batch >= dp, so every DP group is busy and every GPU streams its attention shard."""
    m, lay = cm.model, cm.layout
    assert batch >= lay.dp
    kv_bytes = batch * _kv_read_per_seq(m, lay.tp, ctx, cm.kv_dtype) / lay.dp / lay.pp
    # matmul FLOPs: 2 per weight per token for every weight a token multiplies, plus the LM
    # head's 2 * h * vocab per sequence; spread over all GPUs
    routed = _weight_params(m, 1, 1)[2]
    gemm = 2.0 * (_active_matmul_params(m) - routed) * batch
    gemm += 2.0 * m.hidden_size * m.vocab_size * batch
    moe = 2.0 * routed * batch
    attn = _attn_flops(m, (ctx,)) * batch
    g = lay.gpus
    return PerGPU(weight_bytes(cm), kv_bytes, gemm / g, moe / g, attn / g)


def prefill_work(cm: CostModel, isl: int) -> tuple[PerGPU, int]:
    """Per-GPU work of prefilling one prompt of `isl` tokens (nothing cached), and the engine
    iterations it takes (chunks of the engine's per-prompt token budget, each of which streams
    the weights again)."""
    m, lay = cm.model, cm.layout
    routed = _weight_params(m, 1, 1)[2]
    gemm = 2.0 * (_active_matmul_params(m) - routed) * isl
    gemm += 2.0 * m.hidden_size * m.vocab_size  # one logits row
    moe = 2.0 * routed * isl
    g = lay.gpus
    chunks = math.ceil(isl / cm.prompt_token_budget)
    attn = _prefill_attn_flops(m, isl)
    return PerGPU(weight_bytes(cm), 0.0, gemm / g, moe / g, attn / g), chunks


def peaks(cm: CostModel) -> tuple[float, float, float, float]:
    """(HBM B/s, GEMM FLOP/s, MoE FLOP/s, attention FLOP/s): catalog datasheet peaks.
    GPUSpec.hbm_tbps is in TB/s = 1e12 B/s; GPUSpec.tflops(dtype) is the dense peak in
    1e12 FLOP/s of that dtype (or of the next wider dtype the GPU has). Attention runs at the
    KV dtype's peak."""
    gpu = cm.gpu
    return (
        gpu.hbm_tbps * 1e12,
        gpu.tflops(cm.weight_dtype) * 1e12,
        gpu.tflops(cm.moe_dtype) * 1e12,
        gpu.tflops(cm.kv_dtype) * 1e12,
    )


def decode_bound(cm: CostModel, batch: int, ctx: int) -> tuple[float, float]:
    """(HBM bound, tensor-core bound) of one decode step, s."""
    w = decode_work(cm, batch, ctx)
    hbm, fg, fm, fa = peaks(cm)
    return (w.weight_bytes + w.kv_bytes) / hbm, w.gemm_flops / fg + w.moe_flops / fm + (
        w.attn_flops / fa
    )


def prefill_bound(cm: CostModel, isl: int) -> tuple[float, float]:
    """(HBM bound, tensor-core bound) of prefilling one `isl`-token prompt, s."""
    w, chunks = prefill_work(cm, isl)
    hbm, fg, fm, fa = peaks(cm)
    return chunks * w.weight_bytes / hbm, w.gemm_flops / fg + w.moe_flops / fm + (w.attn_flops / fa)
