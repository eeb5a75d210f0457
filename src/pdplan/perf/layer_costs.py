"""Per-layer op costs (GEMMs, attention, MoE, collectives) used by CostModel for one step."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.attn_sparse import compressed_attn, indexer_coeffs, replicated_params
from pdplan.perf.collectives import Links
from pdplan.perf.efficiency import Efficiency
from pdplan.perf.hardware import ACT, Hardware
from pdplan.perf.linear_attn import linear_attn_time
from pdplan.perf.moe_parallel import busiest_ep_rank, moe_comm
from pdplan.perf.step import BatchShape

__all__ = [
    "Hardware",
    "LayerClass",
    "Links",
    "Parts",
    "add_token_parts",
    "attention_time",
    "attn_coeffs",
    "full_layers",
    "gemm_time",
    "indexer_coeffs",
    "layer_classes",
    "mla_kernels",
    "moe_kernels",
]


@dataclass
class Parts:
    """Accumulated seconds per op family."""

    gemm: float = 0.0
    attention: float = 0.0
    moe: float = 0.0
    comm: float = 0.0


@dataclass(frozen=True)
class LayerClass:
    kind: str  # "full" | "sliding" | "linear" | "none" (no token mixer)
    moe: bool
    ffn: bool = True  # False: a mixer-only block (Nemotron-H Mamba / attention layers)


def layer_classes(model: ModelSpec) -> list[tuple[LayerClass, int]]:
    """Distinct (attention kind, MoE?, FFN?) layer classes with their counts, first-seen order."""
    counts: dict[LayerClass, int] = {}
    for i, kind in enumerate(model.layer_types):
        ffn = model.ffn_kind(i)
        c = LayerClass(kind, ffn == "moe", ffn != "none")
        counts[c] = counts.get(c, 0) + 1
    return list(counts.items())


def full_layers(classes: list[tuple[LayerClass, int]]) -> float:
    """Layers counted as full transformer layers for kernel launches: one with a token mixer
    and an FFN counts 1, a mixer-only or FFN-only block 1/2 (Nemotron-H / Nemotron-3 layers
    hold one of Mamba, attention or MoE each: norm, projections, the op, residual add)."""
    return sum(n * ((c.kind != "none") + c.ffn) / 2 for c, n in classes)


def moe_kernels(model: ModelSpec, eff: Efficiency) -> float:
    """Kernel launches a step spends in MoE layers beyond a dense layer's `kernels_per_layer`:
    eff.moe_kernels per MoE layer (router GEMM, top-k, block alignment, expert-output sum) and
    eff.shared_expert_kernels more where the layer has shared experts (their gate/up, act, down).
    Engines that fuse these (or whose fit absorbed them into kernel_s) set 0."""
    m = model.moe
    if m is None:
        return 0.0
    per_layer = eff.moe_kernels + (eff.shared_expert_kernels if m.num_shared_experts else 0.0)
    return per_layer * model.num_moe_layers


def mla_kernels(model: ModelSpec, eff: Efficiency) -> float:
    """Kernel launches a step spends in MLA attention layers beyond a GQA layer's:
    eff.mla_kernels per layer whose token mixer is MLA attention (not a linear-attention or
    mixer-free layer); 0 for a GQA model."""
    if model.mla is None:
        return 0.0
    return eff.mla_kernels * sum(1 for t in model.layer_types if t not in ("none", "linear"))


def gemm_time(
    m: float,
    k: float,
    n: float,
    wbytes: float,
    peak: float,
    hbm: float,
    eff: Efficiency,
    eta_scale: float = 1.0,
    pad_cap: float = math.inf,
) -> float:
    """Roofline time of an (m x k) @ (k x n) GEMM, seconds.

    # compute: 2*m*k*n FLOPs at peak * gemm_eta * m/(m + m_half)  (small-M GEMMs under-fill tiles;
    #   m_half = min(gemm_m_half, pad_cap): Hardware.pad_cap, the padding a library allows)
    # memory: weights k*n*wbytes + activations (m*k + m*n)*2 B at hbm * mem_eta
    """
    if m <= 0:
        return 0.0
    m_half = min(eff.gemm_m_half, pad_cap)
    eta_c = eff.gemm_eta * eta_scale * m / (m + m_half)
    flops = 2.0 * m * k * n
    nbytes = k * n * wbytes + (m * k + m * n) * ACT
    return max(flops / (peak * eta_c), nbytes / (hbm * eff.mem_eta))


def add_token_parts(
    parts: Parts,
    cls: LayerClass,
    count: int,
    model: ModelSpec,
    lay: Layout,
    eff: Efficiency,
    hw: Hardware,
    links: Links,
    tokens: float,
    attn_tokens: float | None = None,
) -> None:
    """Add the parts of `count` layers that depend only on the step's token count: the
    attention projections, the dense or MoE FFN and their collectives (seconds). The
    attention side runs on `attn_tokens` / dp tokens per DP group (default `tokens`: balanced;
    the cost model passes dp x its busiest rank's tokens); routed experts see all `tokens`."""
    t_grp = (tokens if attn_tokens is None else attn_tokens) / lay.dp  # per DP-attention group
    h = model.hidden_size
    if cls.kind != "none":
        parts.gemm += count * _attn_proj(model, cls.kind, t_grp, lay, eff, hw)
        parts.comm += count * links.all_reduce(t_grp * h * ACT, lay.tp)  # after attention
    if not cls.ffn:
        return
    if cls.moe:
        parts.moe += count * _moe_ffn(model, tokens, lay, eff, hw)
        parts.comm += count * moe_comm(model, tokens, lay, links)
    else:
        w, up = model.intermediate_size, model.ffn_mats - 1  # gate + up, or up alone
        parts.gemm += count * (
            gemm_time(
                t_grp, h, up * w / lay.tp, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap
            )
            + gemm_time(t_grp, w / lay.tp, h, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap)
        )
        parts.comm += count * links.all_reduce(t_grp * h * ACT, lay.tp)


# FlashMLA decode: 660 of H800's 989 dense BF16 TFLOP/s in its compute-bound setting (DeepSeek
# FlashMLA README, 2025-02) = 0.67; taken as 0.6. TensorRT-LLM's fitted attn_eta (0.3, its lower
# bound: its prefill attention) made DeepSeek-V3 TP8 decode at batch 256 compute-bound on H20
# (25 ms where the latent's read takes ~9 ms, and H100 needs 19 ms)
DECODE_ATTN_ETA = 0.6


def attn_coeffs(
    model: ModelSpec, kind: str, lay: Layout, eff: Efficiency, hw: Hardware
) -> tuple[float, float]:
    """(seconds per causal query-key pair in prefill, seconds per context token read in
    decode) of one attention layer on one GPU; both are linear, so a step's attention is
    pairs * a + ctx * b (per DP group and CP rank). Linear-attention and mixer-free layers
    return (0, 0)."""
    if kind in ("linear", "none"):
        return 0.0, 0.0
    heads = model.num_heads / lay.tp
    if model.csa is not None:
        # DeepSeek-V4: QK and PV over one shared K=V entry of head_dim per key (MQA), read
        # once per step by every TP rank (the entry is replicated)
        hd = model.csa.head_dim
        pf = df = 4.0 * heads * hd
        kv = hd * hw.kvb
    elif model.mla is not None:
        a = model.mla
        # prefill: MHA over decompressed K/V: QK (qk_head_dim) + PV (v_head_dim) MACs per pair
        pf = 2.0 * heads * (a.qk_head_dim + a.v_head_dim)
        # decode (weight absorption, DeepSeek-V2 s2.1): scores over latent+rope, values over
        # latent; the latent is replicated on every TP rank, so each rank reads all of it
        df = 2.0 * heads * (2 * a.kv_lora_rank + a.qk_rope_head_dim)
        kv = (a.kv_lora_rank + a.qk_rope_head_dim) * hw.kvb
    else:
        g = model.geom(kind)
        heads = g.num_heads / lay.tp
        pf = 2.0 * heads * (g.head_dim + g.v_head_dim)  # QK^T and PV: 2 FLOPs per MAC
        df = pf
        kv = max(1.0, g.num_kv_heads / lay.tp) * g.kv_width * hw.kvb  # KV heads replicate
    per_pair = pf / (hw.attn_flops * eff.attn_eta)
    # decode kernels (FlashMLA, XQA, FlashInfer decode) keep at least DECODE_ATTN_ETA of peak
    # where the fitted attn_eta (prefill's) sits lower: only MLA decode, ~100x the FLOPs per
    # byte of GQA, is ever compute-bound, and only on low-FLOP GPUs (H20)
    dec_eta = max(eff.attn_eta, DECODE_ATTN_ETA)
    per_ctx = max(df / (hw.attn_flops * dec_eta), kv / (hw.hbm * eff.attn_mem_eta))
    return per_pair, per_ctx


def attention_time(
    kind: str,
    coeffs: tuple[float, float],
    model: ModelSpec,
    lay: Layout,
    eff: Efficiency,
    hw: Hardware,
    shape: BatchShape,
) -> float:
    """One layer's attention core for `shape`; sliding layers cap each query at the window."""
    if kind == "linear":
        return linear_attn_time(model, shape, lay, eff, hw)
    if kind == "none":
        return 0.0
    if model.csa is not None:
        return compressed_attn(kind, coeffs, model, lay, eff, hw, shape)
    pairs = shape.prefill_pairs / lay.dp / lay.cp
    ctx = shape.decode_ctx / lay.dp / lay.cp if shape.decode_seqs else 0.0
    w = model.sliding_window
    if kind == "sliding" and w:
        pairs = min(pairs, shape.prefill_tokens / lay.dp * w)
        ctx = min(ctx, shape.decode_seqs / lay.dp * w)
    topk = model.mla.index_topk if model.mla is not None else 0
    if kind == "sparse" and model.index is not None:
        topk = model.index.index_topk
    if not topk:
        return pairs * coeffs[0] + ctx * coeffs[1]
    # DSA: the indexer scores every (query, key) pair, then the MLA core reads only the top-k
    # keys of each query. A prompt step skips the logits while no sequence is longer than
    # top-k (SGLang nsa_indexer.py forward_cuda: skip_logits_computation); a causal chunk's
    # mean query context pairs/tokens is about half its longest, so 2 x mean > top-k stands in
    # for that test. Decode steps always score.
    ipair, ictx = indexer_coeffs(model, lay, eff, hw)
    scored = pairs if 2.0 * shape.prefill_pairs > topk * max(shape.prefill_tokens, 1) else 0.0
    core_pairs = min(pairs, shape.prefill_tokens / lay.dp / lay.cp * topk)
    core_ctx = min(ctx, shape.decode_seqs / lay.dp / lay.cp * topk)
    return core_pairs * coeffs[0] + core_ctx * coeffs[1] + scored * ipair + ctx * ictx


def _attn_proj(
    model: ModelSpec, kind: str, tokens: float, lay: Layout, eff: Efficiency, hw: Hardware
) -> float:
    """QKV + output projections of one layer as one weight stream, TP-split; a DSA indexer's
    projections are replicated on every TP rank (SGLang nsa_indexer.py ReplicatedLinear)."""
    idx = replicated_params(model, kind)
    params = (model.attn_params(kind) - idx) / lay.tp + idx
    h = model.hidden_size
    # treat as a GEMM of k = hidden, n = params / hidden (same FLOPs and weight bytes)
    return gemm_time(tokens, h, params / h, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap)


def _moe_ffn(model: ModelSpec, tokens: float, lay: Layout, eff: Efficiency, hw: Hardware) -> float:
    """Routed experts (only those touched, on the busiest EP rank: busiest_ep_rank) + shared
    experts for `tokens` tokens of the step."""
    m = model.moe
    assert m is not None
    h, ie = m.expert_dim(model.hidden_size), m.expert_intermediate_size  # h: expert input width
    touched, assign = busiest_ep_rank(m.num_experts, m.experts_per_token, tokens, lay.ep)
    m_per_expert = max(1.0, assign / max(touched, 1e-9))
    m_half = min(eff.gemm_m_half, hw.moe_pad_cap * eff.moe_eta)  # grouped GEMM: moe_eta of it
    eta_c = eff.gemm_eta * eff.moe_eta * m_per_expert / (m_per_expert + m_half)
    mats = model.ffn_mats  # gate, up, down (or up, down for a plain MLP expert)
    flops = 2.0 * assign * mats * h * ie / lay.etp
    nbytes = touched * mats * h * ie * hw.mb / lay.etp + 2 * assign * h * ACT
    routed = max(flops / (hw.moe_flops * eta_c), nbytes / (hw.hbm * eff.mem_eta))
    shared = 0.0
    h, t_grp = model.hidden_size, tokens / lay.dp
    if m.latent_size:  # hidden -> latent -> hidden projections around the experts, TP-split
        lat = m.latent_size / lay.tp
        shared += gemm_time(t_grp, h, lat, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap)
        shared += gemm_time(t_grp, lat, h, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap)
    if m.num_shared_experts:
        ws = m.num_shared_experts * m.shared_intermediate_size / lay.tp
        up = (mats - 1) * ws
        shared += gemm_time(t_grp, h, up, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap)
        shared += gemm_time(t_grp, ws, h, hw.wb, hw.gemm_flops, hw.hbm, eff, pad_cap=hw.pad_cap)
    return routed + shared
