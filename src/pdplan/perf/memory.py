"""Per-GPU memory under a layout: weights, activations, reserve, and the KV capacity left."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError, DoesNotFitError
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import canonical_engine
from pdplan.perf.kv_state import state_bytes_per_seq_per_gpu, state_tokens
from pdplan.perf.sglang_memory import sglang_mem_fraction
from pdplan.perf.weights import draft_head_bytes, weight_bytes_per_gpu

__all__ = [
    "ENGINE_KV_MEMORY",
    "ENGINE_RESERVES_OUTPUT_KV",
    "GiB",
    "MemoryPlan",
    "draft_head_bytes",
    "engine_kv_memory",
    "engine_reserves_output_kv",
    "kv_bytes_per_token_per_gpu",
    "plan_memory",
    "pool_tokens_per_seq",
    "weight_bytes_per_gpu",
]

GiB = float(2**30)
# Fixed runtime footprint per GPU outside weights/KV/activations: CUDA context, cuBLAS/NCCL
# workspaces, CUDA-graph pools. ~1-2 GiB observed in vLLM startup logs ("non_torch_memory").
RUNTIME_OVERHEAD_BYTES = 1.5 * GiB
# Default fraction of HBM the engine may use: vLLM --gpu-memory-utilization 0.9 (vLLM docs);
# the rest is headroom. SGLang's --mem-fraction-static default depends on the GPU and the launch
# (perf.sglang_memory: 0.82-0.86 on 80-180 GB parts); 0.9 stands in where those are not known.
DEFAULT_MEM_FRACTION = 0.90
# How each engine sizes its KV pool by default: (fraction, of_free). vLLM and SGLang take a
# fraction of the whole device (--gpu-memory-utilization 0.9; --mem-fraction-static);
# TensorRT-LLM takes a fraction of the memory still free once weights and workspaces are
# loaded (KvCacheConfig.free_gpu_memory_fraction, default 0.9; trtllm-serve
# --kv_cache_free_gpu_memory_fraction 0.9), so a model that nearly fills the GPU still gets
# most of what is left.
ENGINE_KV_MEMORY: dict[str, tuple[float, bool]] = {
    "vllm": (0.90, False),
    "sglang": (DEFAULT_MEM_FRACTION, False),
    "trtllm": (0.90, True),
}


# Engines that admit a prompt only when its whole output's KV is free beside what the running
# requests reserved (sim.InstanceSpec.kv_reserve_output): TensorRT-LLM's default capacity
# scheduler policy GUARANTEED_NO_EVICT (tensorrt_llm/llmapi/llm_args.py SchedulerConfig;
# "guarantees that a started request is never evicted"). vLLM admits on the prompt's blocks and
# preempts the newest request when decodes fill the cache (vllm/v1/core/sched/scheduler.py);
# SGLang admits on the prompt plus a decaying estimate of the outputs (new_token_ratio) and
# retracts on overflow.
ENGINE_RESERVES_OUTPUT_KV = frozenset({"trtllm"})


def engine_reserves_output_kv(engine: str) -> bool:
    """Does `engine` reserve each request's whole output KV at admission (an alias answers
    for its engine; an unknown engine does not)?"""
    try:
        return canonical_engine(engine) in ENGINE_RESERVES_OUTPUT_KV
    except ConfigError:
        return False


def engine_kv_memory(
    engine: str,
    gpu: GPUSpec | None = None,
    layout: Layout | None = None,
    *,
    chunk_tokens: int | None = None,
    speculative: bool = False,
) -> tuple[float, bool]:
    """(mem_fraction, of_free) for plan_memory: `engine`'s default KV sizing (aliases such
    as ATOM take their engine's; unknown engines the default). SGLang's depends on the GPU
    and the launch: given `gpu` and `layout` (and its chunked-prefill size `chunk_tokens`, and
    whether a draft model runs), its own default rule (perf.sglang_memory) is taken."""
    try:
        eng = canonical_engine(engine)
    except ConfigError:
        return DEFAULT_MEM_FRACTION, False
    if eng == "sglang" and gpu is not None and layout is not None:
        return sglang_mem_fraction(gpu.hbm_gib, layout, chunk_tokens, speculative), False
    return ENGINE_KV_MEMORY.get(eng, (DEFAULT_MEM_FRACTION, False))


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes per GPU (the most loaded pipeline stage) and the KV capacity of one instance."""

    weights_bytes: float
    activation_bytes: float
    runtime_bytes: float
    reserve_bytes: float
    kv_bytes: float  # bytes per GPU left for the KV cache
    hbm_bytes: float
    kv_bytes_per_token: float  # per GPU (its KV shard of one token)
    kv_capacity_tokens: int  # tokens of KV one instance holds (all DP groups together)
    weight_dtype: str
    kv_dtype: str
    # fixed recurrent state of one running sequence per GPU (SSM / linear-attention layers), B;
    # with `context` given, kv_capacity_tokens already counts it (spread over `context` tokens)
    state_bytes_per_seq: float = 0.0
    kv_pool_tokens: int = -1  # KV slots with no state counted, tokens (-1: = kv_capacity_tokens)

    @property
    def state_tokens_per_seq(self) -> int:
        """One sequence's fixed state in KV-pool tokens (perf.kv_state.state_tokens)."""
        return state_tokens(self.state_bytes_per_seq, self.kv_bytes_per_token)

    @property
    def pool_tokens(self) -> int:
        """KV slots of the instance with no state counted: the pool a simulator fills, charging
        state_tokens_per_seq per running sequence on top of its tokens."""
        return self.kv_capacity_tokens if self.kv_pool_tokens < 0 else self.kv_pool_tokens

    def sequences_held(self, tokens: float) -> int:
        """Sequences of `tokens` pool tokens the pool holds at once, each with its fixed state
        (a window model's sequence fills fewer pool tokens than its length: pool_tokens_per_seq)."""
        return int(self.pool_tokens // max(1.0, tokens + self.state_tokens_per_seq))

    @property
    def used_bytes(self) -> float:
        return self.weights_bytes + self.activation_bytes + self.runtime_bytes + self.reserve_bytes

    def to_dict(self) -> dict[str, float | int | str]:
        return {
            "weights_gib": round(self.weights_bytes / GiB, 3),
            "activation_gib": round(self.activation_bytes / GiB, 3),
            "runtime_gib": round(self.runtime_bytes / GiB, 3),
            "reserve_gib": round(self.reserve_bytes / GiB, 3),
            "kv_gib": round(self.kv_bytes / GiB, 3),
            "hbm_gib": round(self.hbm_bytes / GiB, 3),
            "kv_bytes_per_token_per_gpu": self.kv_bytes_per_token,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "state_bytes_per_seq_per_gpu": self.state_bytes_per_seq,
            "state_tokens_per_seq": self.state_tokens_per_seq,
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
        }


def kv_bytes_per_token_per_gpu(
    model: ModelSpec, layout: Layout, kv_dtype: str = "bf16", context: int | None = None
) -> float:
    """KV bytes one token occupies on one GPU of a stage.

    GQA: each TP rank holds max(1, n_kv/tp) KV heads (replicated when TP > n_kv).
    MLA: the latent is not split by heads, so every TP rank holds the whole latent.
    CP splits the sequence, so a token lives on one CP rank: divide by cp.
    """
    full = model.kv_bytes_per_token(kv_dtype, context=context)
    stage_frac = math.ceil(model.num_layers / layout.pp) / model.num_layers
    if model.mla is not None or model.csa is not None:
        shard = 1.0
    elif model.sliding_attn is not None:  # kinds with their own KV head counts
        shard = _mixed_shard(model, layout.tp, kv_dtype, context)
    else:
        shard = max(1.0, model.num_kv_heads / layout.tp) / model.num_kv_heads
    return full * stage_frac * shard / layout.cp


def pool_tokens_per_seq(model: ModelSpec, layout: Layout, kv_dtype: str, tokens: float) -> float:
    """KV-pool tokens (slots of one token's KV in every layer: plan_memory's pool with no
    `context`) that one sequence of `tokens` tokens fills. Sliding-window layers keep only their
    newest `sliding_window` tokens (vLLM V1's hybrid KV-cache manager frees the blocks that
    leave the window; SGLang's SWA pool, TensorRT-LLM's variable sliding window), so a long
    sequence of a window model fills fewer slots than its tokens; = tokens for other models."""
    n = max(1, round(tokens))
    if not model.sliding_window or n <= model.sliding_window:
        return float(tokens)
    full = kv_bytes_per_token_per_gpu(model, layout, kv_dtype)  # B/token, every layer growing
    held = kv_bytes_per_token_per_gpu(model, layout, kv_dtype, context=n) * n  # B, windows capped
    # (a draft head's KV layer scales both alike: plan_memory's 1 + draft_layers / L)
    return held / full * tokens / n if full > 0 else float(tokens)


def _mixed_shard(model: ModelSpec, tp: int, kv_dtype: str, context: int | None) -> float:
    """Share of a token's KV one TP rank holds when layer kinds differ in KV heads: each
    kind's bytes split over min(tp, its KV heads) ranks, weighted by the kind's bytes."""
    total = held = 0.0
    for kind in set(model.layer_types) - {"none", "linear"}:
        b = model.kv_layer_bytes(kind, kv_dtype) * model.count_layers(kind)
        if kind == "sliding" and context is not None and model.sliding_window:
            b *= min(1.0, model.sliding_window / max(context, 1))  # as kv_bytes_per_token
        nkv = model.geom(kind).num_kv_heads
        total += b
        held += b * max(1.0, nkv / tp) / nkv
    return held / total if total else 1.0


def _activation_bytes(model: ModelSpec, layout: Layout, chunk_tokens: int) -> float:
    """Peak activation workspace for one step of `chunk_tokens` tokens, bytes (BF16).

    Largest live tensors: the FFN up/gate output (2 * I / tp per token), the hidden states
    (~4 h per token: residual, norm out, attention out, QKV), and the logits of the sampled
    rows (vocab / tp per sequence, FP32; bounded by 256 rows here).
    """
    ffn = model.intermediate_size
    if model.moe is not None:
        m = model.moe
        ffn = max(ffn, m.experts_per_token * m.expert_intermediate_size)
    per_token = (4 * model.hidden_size + 2 * ffn / layout.tp) * 2.0
    logits = min(chunk_tokens, 256) * model.vocab_size / layout.tp * 4.0
    return chunk_tokens * per_token + logits


def _does_not_fit(
    parts: tuple[float, float, int, float, float],
    used: float,
    mem_fraction: float,
    of_free: bool,
    gpu: GPUSpec,
    layout: Layout,
    wdt: str,
) -> DoesNotFitError:
    """The error for weights + activations + runtime + reserve (`used` B) over the device:
    every part in GiB and the shortfall."""
    weights, head, draft_layers, act, reserve = parts
    hbm = gpu.hbm_bytes
    return DoesNotFitError(
        f"does not fit: needs {used / GiB:.1f} GiB per GPU before any KV cache "
        f"(weights {weights / GiB:.1f}"
        + (f", of which a {draft_layers}-layer draft head {head / GiB:.1f}" if head else "")
        + f" + activations {act / GiB:.1f} + runtime "
        f"{RUNTIME_OVERHEAD_BYTES / GiB:.1f} + reserve {reserve / GiB:.1f}: the "
        f"{1.0 - mem_fraction:.3g} of {'the memory left free' if of_free else 'the device'} "
        f"that the engine's memory fraction {mem_fraction:.3g} keeps out), has "
        f"{hbm / GiB:.0f} GiB on {gpu.name}: short by {(used - hbm) / GiB:.1f} GiB "
        f"({layout}, {wdt.upper()} weights)",
        need_bytes=used,
        have_bytes=hbm,
    )


def _no_room_for_state(
    kv_free: float, state: float, per_tok: float, gpu: GPUSpec, layout: Layout, wdt: str
) -> DoesNotFitError:
    """The error for a hybrid (SSM / linear-attention) model whose weights fit but whose KV
    memory (`kv_free` B per GPU) cannot hold one running sequence: its fixed recurrent state
    (`state` B per GPU) plus one token's KV (`per_tok` B per GPU). Such a layout serves no
    request: vLLM checks at start-up that the KV cache holds at least one request
    (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory) and refuses to start."""
    need = state + per_tok
    return DoesNotFitError(
        f"does not fit: weights, activations, runtime and reserve leave {kv_free / GiB:.2f} GiB "
        f"per GPU for the KV cache, "
        f"less than one sequence's recurrent state ({state / GiB:.2f} GiB per GPU) and one "
        f"token's KV: short by {(need - kv_free) / GiB:.2f} GiB on {gpu.name} "
        f"({layout}, {wdt.upper()} weights)",
        need_bytes=need,
        have_bytes=kv_free,
    )


def plan_memory(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: Layout,
    weight_dtype: str | None = None,
    kv_dtype: str = "bf16",
    *,
    moe_dtype: str | None = None,
    mem_fraction: float = DEFAULT_MEM_FRACTION,
    of_free: bool = False,
    chunk_tokens: int = 8192,
    context: int | None = None,
    check: bool = True,
    draft_layers: int = 0,
) -> MemoryPlan:
    """Memory per GPU; raises DoesNotFitError (with the shortfall) when weights do not fit.
    The engine keeps `mem_fraction` of the device (or, with `of_free`, of what is free after
    weights, activations and runtime: TensorRT-LLM) and leaves the rest as headroom.
    `draft_layers`: a speculative draft head's layers, their weights and KV (one layer's
    each) on top of the model's."""
    wdt = weight_dtype or model.weight_dtype
    hbm = gpu.hbm_bytes
    weights = weight_bytes_per_gpu(model, layout, wdt, moe_dtype)
    head = draft_head_bytes(model, layout, draft_layers, wdt, moe_dtype)
    weights += head
    act = _activation_bytes(model, layout, chunk_tokens)
    base = max(0.0, hbm - weights - act - RUNTIME_OVERHEAD_BYTES) if of_free else hbm
    reserve = (1.0 - mem_fraction) * base
    used = weights + act + RUNTIME_OVERHEAD_BYTES + reserve
    if check and used >= hbm:
        parts = (weights, head, draft_layers, act, reserve)
        raise _does_not_fit(parts, used, mem_fraction, of_free, gpu, layout, wdt)
    kv_free = max(0.0, hbm - used)
    per_tok = kv_bytes_per_token_per_gpu(model, layout, kv_dtype, context)
    per_tok *= 1.0 + draft_layers / model.num_layers  # the head's layer keeps its own KV
    # each DP-attention group holds its own sequences' KV; CP ranks hold disjoint tokens
    groups = layout.dp
    pool = int(kv_free / per_tok) * groups if per_tok > 0 else 0
    state = state_bytes_per_seq_per_gpu(model, layout)  # B per running sequence per GPU
    if check and state and kv_free < state + per_tok:
        raise _no_room_for_state(kv_free, state, per_tok, gpu, layout, wdt)
    # at `context`, a sequence holds context x per_tok + state: per token, per_tok + state / ctx
    seq_tok = per_tok + state / context if context and state else per_tok
    cap = int(kv_free / seq_tok) * groups if seq_tok > 0 else 0
    return MemoryPlan(
        weights_bytes=weights,
        activation_bytes=act,
        runtime_bytes=RUNTIME_OVERHEAD_BYTES,
        reserve_bytes=reserve,
        kv_bytes=kv_free,
        hbm_bytes=hbm,
        kv_bytes_per_token=per_tok,
        kv_capacity_tokens=cap,
        weight_dtype=wdt,
        kv_dtype=kv_dtype,
        state_bytes_per_seq=state,
        kv_pool_tokens=pool,
    )
