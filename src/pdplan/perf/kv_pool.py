"""A KV pool in the simulator's terms: tokens that grow with the sequence, plus a fixed part."""

from __future__ import annotations

import math

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.memory import kv_bytes_per_token_per_gpu

__all__ = ["growing_pool"]

# Below this share of a token's bytes in layers that grow without bound, a model is all windows
# (e.g. every layer sliding): its pool stays counted in whole tokens (dimensionless)
_MIN_GROWING_SHARE = 0.01


def growing_pool(
    model: ModelSpec, layout: Layout, kv_dtype: str, pool_tokens: int, state_tokens: int
) -> tuple[int, int, tuple[tuple[int, float], ...]]:
    """(pool, fixed tokens per sequence, window charges) counted in tokens of the layers whose
    KV grows with the sequence, for the simulator, which charges each running sequence its
    tokens, a fixed part and its window layers (InstanceSpec.kv_capacity_tokens /
    kv_state_tokens / kv_window_tokens).

    `pool_tokens` / `state_tokens` are plan_memory's: slots of one token's KV in every layer,
    and a sequence's recurrent state in such slots. A model with sliding-window layers keeps
    only the newest `sliding_window` tokens there (vLLM V1's hybrid KV-cache manager frees the
    blocks leaving the window; SGLang's SWA pool; TensorRT-LLM's variable sliding window), so
    counting every layer per token over-charged a long sequence (Gemma-3-27B at 4k tokens:
    ~2.6x). Here the window layers' KV is one (W, c) pair: a sequence of L tokens holds
    c * min(L, W) pool tokens there. Other models: the inputs unchanged and no windows. The
    split comes from kv_bytes_per_token_per_gpu at 2 and 4 windows (B per sequence = growing
    B/token x n + window B for n >= window), so TP sharding of each layer kind is as the
    memory plan has it."""
    w = model.sliding_window
    if not w:
        return pool_tokens, state_tokens, ()
    full = kv_bytes_per_token_per_gpu(model, layout, kv_dtype)  # B/token, every layer growing
    held2 = kv_bytes_per_token_per_gpu(model, layout, kv_dtype, context=2 * w) * 2 * w  # B
    held4 = kv_bytes_per_token_per_gpu(model, layout, kv_dtype, context=4 * w) * 4 * w  # B
    grow = (held4 - held2) / (2 * w)  # B/token of the unbounded layers
    if full <= 0 or grow < _MIN_GROWING_SHARE * full:
        return pool_tokens, state_tokens, ()
    share = grow / full  # dimensionless: a growing token in whole-token slots
    window = (held2 - grow * 2 * w) / full  # whole-token slots: the window layers, full
    per_token = window / share / w  # growing-token slots per windowed token
    return int(pool_tokens / share), math.ceil(state_tokens / share), ((int(w), per_token),)
