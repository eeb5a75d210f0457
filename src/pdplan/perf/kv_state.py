"""Per-sequence recurrent state (SSM / linear attention) on one GPU, in KV-pool terms."""

from __future__ import annotations

import math

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout

__all__ = ["state_bytes_per_seq_per_gpu", "state_tokens"]


def state_bytes_per_seq_per_gpu(model: ModelSpec, layout: Layout) -> float:
    """Fixed state one running sequence holds on one GPU of the heaviest stage, B.

    ModelSpec.linear_state_bytes (all linear-attention / Mamba layers, their own state dtype),
    split over TP by value heads as the engines shard them (vLLM MambaMixer2 and the gated
    DeltaNet layer give each TP rank num_heads / tp heads of state and conv state; replicated
    past one head per rank), times the stage's share of those layers under PP
    (ceil(n / pp) / n: the heaviest stage). CP does not split it: every CP rank runs every
    layer of its sequence. Engines hold it per running request from the same memory the KV
    cache gets (vLLM V1 hybrid allocator: one state page per request per Mamba layer group;
    SGLang MambaPool beside the token pool), so it competes with KV for the pool.
    """
    full = model.linear_state_bytes()
    la = model.linear_attn
    if not full or la is None:
        return 0.0
    n = model.count_layers("linear")
    stage = math.ceil(n / layout.pp) / n if n else 1.0
    heads = max(1, la.num_value_heads)
    shard = max(1.0, heads / layout.tp) / heads
    return full * stage * shard


def state_tokens(state_bytes: float, kv_bytes_per_token: float) -> int:
    """A sequence's fixed state in KV-pool tokens: ceil(state B / KV B per token), both per
    GPU; 0 without state. The simulator and the ratio charge it per running sequence."""
    if state_bytes <= 0 or kv_bytes_per_token <= 0:
        return 0
    return math.ceil(state_bytes / kv_bytes_per_token)
