"""What would fit when a given instance layout does not: the shortfall and the alternatives."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from pdplan.errors import DoesNotFitError
from pdplan.parallel.layout import Layout
from pdplan.plan.layout_pick import (
    DEFAULT_PPS,
    KVSizing,
    past_context,
    request_kv_text,
    span,
    valid,
)

if TYPE_CHECKING:
    from pdplan.catalog.gpu_spec import GPUSpec
    from pdplan.catalog.model_spec import ModelSpec

__all__ = ["fit_hint", "fits", "require_fit"]

# TP widths tried for a fit suggestion, GPUs: powers of two up to a 72-GPU NVLink rack (GB200
# NVL72 scale-up domain), as plan.layout_pick tries for the default.
_HINT_TPS = (1, 2, 4, 8, 16, 32, 64, 72)


def fits(
    spec: ModelSpec,
    gpu: GPUSpec,
    lay: Layout,
    *,
    weight_dtype: str | None,
    kv_dtype: str,
    tokens: int = 0,
    sizing: KVSizing = KVSizing(),
) -> bool:
    """Is `lay` valid, do the weights fit, and does the KV cache (sized as `sizing` says) hold
    `tokens` (one request)?"""
    from pdplan.perf.memory import plan_memory

    if not valid(spec, gpu, lay):
        return False
    frac, of_free = sizing.of(gpu, lay)
    try:
        mem = plan_memory(spec, gpu, lay, weight_dtype, kv_dtype, context=tokens or None,
                          mem_fraction=frac, of_free=of_free)  # fmt: skip
    except DoesNotFitError:
        return False
    return mem.kv_capacity_tokens >= tokens


def require_fit(
    spec: ModelSpec,
    gpu: GPUSpec,
    lay: Layout,
    option: str,
    *,
    weight_dtype: str | None = None,
    kv_dtype: str = "bf16",
    tokens: int = 0,
    what: str = "request",
    sizing: KVSizing = KVSizing(),
) -> None:
    """Refuse `lay`, given as `option`, when its weights do not fit or its KV cache (sized as
    `sizing` says) holds no `what` of `tokens` tokens: the shortfall, then what would fit
    (fit_hint)."""
    from pdplan.perf.memory import plan_memory

    frac, of_free = sizing.of(gpu, lay)
    try:
        mem = plan_memory(spec, gpu, lay, weight_dtype, kv_dtype, context=tokens or None,
                          mem_fraction=frac, of_free=of_free)  # fmt: skip
    except DoesNotFitError as e:
        head, need_b, have_b = str(e), e.need_bytes, e.have_bytes
    else:
        if mem.kv_capacity_tokens >= tokens:
            return
        head = (
            f"KV capacity {mem.kv_capacity_tokens:,} tokens per instance holds no {what} of "
            f"{tokens:,} tokens (short by {tokens - mem.kv_capacity_tokens:,})"
        )
        need_b, have_b = tokens * mem.kv_bytes_per_token, mem.kv_bytes
    hint = fit_hint(spec, gpu, lay, option, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                    tokens=tokens, what=what, sizing=sizing)  # fmt: skip
    raise DoesNotFitError(f"{head}; {option} {lay}: {hint}", need_bytes=need_b, have_bytes=have_b)


def _smallest_fitting(
    spec: ModelSpec, gpu: GPUSpec, fit: Callable[[Layout], bool]
) -> Layout | None:
    """The fewest-GPU TP (TP+EP for an MoE model) layout inside the node that `fit` takes."""
    for t in (t for t in _HINT_TPS if t <= span(gpu)):
        cands = [Layout(tp=t, ep=t), Layout(tp=t)] if spec.moe is not None and t > 1 else []
        for lay in cands or [Layout(tp=t)]:
            if fit(lay):
                return lay
    return None


def fit_hint(
    spec: ModelSpec,
    gpu: GPUSpec,
    lay: Layout,
    option: str,
    *,
    weight_dtype: str | None,
    kv_dtype: str,
    tokens: int = 0,
    what: str = "request",
    sizing: KVSizing = KVSizing(),
) -> str:
    """What would fit where `lay` does not: the smallest TP/EP layout in the node, FP8 weights
    or an FP8 KV cache on `lay`; or that nothing in one node does (the weights, or, when they
    fit, one `what` of `tokens` tokens)."""
    from pdplan.catalog.model_parts import dtype_bytes

    def fit(
        lay: Layout, weights: str | None = weight_dtype, kv: str = kv_dtype, n: int = tokens
    ) -> bool:
        return fits(spec, gpu, lay, weight_dtype=weights, kv_dtype=kv, tokens=n, sizing=sizing)

    hints = []
    wide = _smallest_fitting(spec, gpu, fit)
    if wide is not None:
        hints.append(f"{option} {wide} (the smallest TP/EP layout in the node that fits)")
    wider_weights = dtype_bytes(weight_dtype or spec.weight_dtype) > dtype_bytes("fp8")
    if wider_weights and not gpu.fp16_only and fit(lay, weights="fp8"):  # no FP8 pre-Ampere
        hints.append(f"--weight-dtype fp8 on {lay}")
    if kv_dtype != "fp8" and fit(lay, kv="fp8"):
        hints.append(f"--kv-dtype fp8 on {lay}")
    if hints:
        return "would fit: " + " or ".join(hints)
    node = f"one {span(gpu)}-GPU node"
    if tokens > 0 and _smallest_fitting(spec, gpu, partial(fit, n=0)) is not None:
        return (
            f"{spec.name}'s weights fit, but {request_kv_text(spec, tokens, kv_dtype, what)}, "
            f"more than any TP/EP layout within {node} holds{past_context(spec, tokens)}"
        )
    return (
        f"no TP/EP layout within {node} fits {spec.name} on {gpu.name}: "
        f"{_across_nodes(spec, gpu, fit)}, lower-precision "
        "weights or a GPU with more memory"
    )


def _across_nodes(spec: ModelSpec, gpu: GPUSpec, fit: Callable[[Layout], bool]) -> str:
    """PP across nodes, naming the shallowest pipeline of the widest TP in a node that fits."""
    tp = max(t for t in _HINT_TPS if t <= span(gpu) and valid(spec, gpu, Layout(tp=t)))
    for pp in DEFAULT_PPS:
        lay = Layout(tp=tp, pp=pp)
        if fit(lay):
            return f"PP across nodes ({lay} fits)"
    return "PP across more nodes"
