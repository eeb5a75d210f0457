"""Weight bytes on one GPU under a layout: decoder layers, embedding / LM head, a draft head."""

from __future__ import annotations

import math

from pdplan.catalog.model_spec import ModelSpec, dtype_bytes
from pdplan.parallel.checks import pp_stage_layers
from pdplan.parallel.layout import Layout

__all__ = ["draft_head_bytes", "weight_bytes_per_gpu"]


def _stages(model: ModelSpec, pp: int) -> list[range]:
    """Each pipeline stage's layers, split as parallel.checks.pp_stage_layers does (the
    first stages take one extra layer when pp does not divide L)."""
    bounds, start = [], 0
    for n in pp_stage_layers(model.num_layers, pp):
        bounds.append(range(start, start + n))
        start += n
    return bounds


def weight_bytes_per_gpu(
    model: ModelSpec, layout: Layout, weight_dtype: str | None = None, moe_dtype: str | None = None
) -> float:
    """Weight bytes on one GPU of the heaviest pipeline stage.

    Attention and dense FFN split TP-ways (replicated across DP-attention groups); routed
    experts split EP-ways by expert and moe_tp-ways inside an expert; shared experts TP-ways;
    embedding and LM head vocab-parallel over TP, in BF16 (engines keep them unquantised).
    With PP the first stage holds the embedding and the last the LM head. The first stage is
    not always the heaviest: DeepSeek-V3's first 3 layers have dense FFNs (first_k_dense_replace)
    and hybrids mix layer kinds, so every stage is summed and the largest sets the memory.
    """
    wb = dtype_bytes(weight_dtype or model.weight_dtype)
    mb = dtype_bytes(moe_dtype or model.default_moe_dtype(weight_dtype))
    emb = model.vocab_size * model.hidden_size * 2.0 / layout.tp  # BF16 embedding shard
    if layout.pp == 1:
        layers = sum(_layer_bytes(model, i, layout, wb, mb) for i in range(model.num_layers))
        return layers + (emb if model.tie_word_embeddings else 2 * emb)
    stages = _stages(model, layout.pp)
    last = len(stages) - 1
    return max(
        sum(_layer_bytes(model, i, layout, wb, mb) for i in stage) + (emb if k in (0, last) else 0)
        for k, stage in enumerate(stages)
    )


def _layer_bytes(model: ModelSpec, i: int, layout: Layout, wb: float, mb: float) -> float:
    """Weight bytes of decoder layer `i` on one GPU (`wb` / `mb`: bytes per dense / expert
    weight)."""
    total = model.attn_params(model.layer_types[i]) * wb / layout.tp
    ffn = model.ffn_kind(i)
    if ffn == "moe":
        m = model.moe
        assert m is not None
        h = model.hidden_size
        experts_local = math.ceil(m.num_experts / layout.ep)
        e_h = m.expert_dim(h)
        total += experts_local * model.ffn_mats * e_h * m.expert_intermediate_size * mb / layout.etp
        total += 2 * h * m.latent_size * wb / layout.tp  # latent projections (0 if none)
        total += (
            m.num_shared_experts * model.ffn_mats * h * m.shared_intermediate_size * wb / layout.tp
        )
        total += h * m.num_experts * 2.0  # router in BF16, replicated
    elif ffn == "dense":
        total += model.dense_ffn_params() * wb / layout.tp
    return total


def draft_head_bytes(
    model: ModelSpec,
    layout: Layout,
    draft_layers: int,
    weight_dtype: str | None = None,
    moe_dtype: str | None = None,
) -> float:
    """Weight bytes on one GPU of a speculative draft head of `draft_layers` decoder layers
    shaped as the model's last (DeepSeek-V3's MTP module is one such layer; its embedding and
    LM head are the target's, shared)."""
    wb = dtype_bytes(weight_dtype or model.weight_dtype)
    mb = dtype_bytes(moe_dtype or model.default_moe_dtype(weight_dtype))
    return draft_layers * _layer_bytes(model, model.num_layers - 1, layout, wb, mb)
