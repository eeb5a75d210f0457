"""The instance layout `pdplan ratio` and `pdplan estimate` run when none is given, and what
would fit instead when a given layout does not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.errors import DoesNotFitError
from pdplan.parallel.checks import check_layout
from pdplan.parallel.layout import Layout

if TYPE_CHECKING:
    from pdplan.catalog.gpu_spec import GPUSpec
    from pdplan.catalog.model_spec import ModelSpec

__all__ = ["DEFAULT_LAYOUT", "DEFAULT_LAYOUT_HELP", "default_layout", "fit_hint", "fits"]

# Quick-start instance layout: the seed's example A job (Llama-3.1-70B on 4 H100s, README).
DEFAULT_LAYOUT = "tp4"
# TP widths tried for the default, GPUs per instance: the default, then wider powers of two up
# to a 72-GPU NVLink rack (GB200 NVL72 scale-up domain); widths past the node/domain are skipped.
_DEFAULT_TPS = (4, 8, 16, 32, 72)
# Pipeline depths tried once TP fills the node, stages (seed s3: TP in the node, PP across nodes).
_DEFAULT_PPS = (2, 4, 8)
# TP widths tried for a fit suggestion, GPUs: powers of two up to the NVL72 rack (as above).
_HINT_TPS = (1, 2, 4, 8, 16, 32, 64, 72)
DEFAULT_LAYOUT_HELP = (
    f"{DEFAULT_LAYOUT} when the model fits it, else the first wider TP in the node that does "
    "(tp8, ...), then PP across nodes (tp8-pp2, ...): the layout `pdplan ratio` picks"
)


def _span(gpu: GPUSpec) -> int:
    """GPUs one TP group may span: the node, or the NVLink domain where it is wider (NVL72)."""
    return max(gpu.gpus_per_node, gpu.scaleup_domain)


def _valid(spec: ModelSpec, gpu: GPUSpec, lay: Layout) -> bool:
    dom = {"scaleup_domain": gpu.scaleup_domain, "gpus_per_node": gpu.gpus_per_node}
    return check_layout(spec, lay, **dom).ok


def default_layout(
    spec: ModelSpec,
    gpu: GPUSpec,
    kv_dtype: str = "bf16",
    picked: list[str] | None = None,
    weight_dtype: str | None = None,
) -> Layout:
    """DEFAULT_LAYOUT when the model fits it, else the first of wider TP in the node, then PP
    across nodes, that holds the weights with room for KV. When it is not DEFAULT_LAYOUT
    because that does not fit, a note saying so is appended to `picked` (once)."""
    from pdplan.perf.memory import plan_memory

    tps = [t for t in _DEFAULT_TPS if t <= _span(gpu)] or [1]
    cands = [Layout(tp=t) for t in tps] + [Layout(tp=tps[-1], pp=p) for p in _DEFAULT_PPS]
    first_err = ""
    for lay in cands:
        if not _valid(spec, gpu, lay):
            continue
        try:
            plan_memory(spec, gpu, lay, weight_dtype, kv_dtype)
        except DoesNotFitError as e:
            first_err = first_err or str(e)
            continue
        if str(lay) != DEFAULT_LAYOUT and first_err and picked is not None and not picked:
            picked.append(f"{DEFAULT_LAYOUT} does not fit ({first_err}); using {lay}")
        return lay
    raise DoesNotFitError(f"no layout up to {cands[-1]} holds {spec.name}; {first_err}")


def fits(
    spec: ModelSpec,
    gpu: GPUSpec,
    lay: Layout,
    *,
    weight_dtype: str | None,
    kv_dtype: str,
    tokens: int = 0,
) -> bool:
    """Is `lay` valid, do the weights fit, and does the KV cache hold `tokens` (one request)?"""
    from pdplan.perf.memory import plan_memory

    if not _valid(spec, gpu, lay):
        return False
    try:
        mem = plan_memory(spec, gpu, lay, weight_dtype, kv_dtype, context=tokens or None)
    except DoesNotFitError:
        return False
    return mem.kv_capacity_tokens >= tokens


def _smallest_fitting(
    spec: ModelSpec, gpu: GPUSpec, weight_dtype: str | None, kv_dtype: str, tokens: int
) -> Layout | None:
    """The fewest-GPU TP (TP+EP for an MoE model) layout inside the node that fits."""
    for t in (t for t in _HINT_TPS if t <= _span(gpu)):
        cands = [Layout(tp=t, ep=t), Layout(tp=t)] if spec.moe is not None and t > 1 else []
        for lay in cands or [Layout(tp=t)]:
            if fits(spec, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, tokens=tokens):
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
) -> str:
    """What would fit where `lay` does not: the smallest TP/EP layout in the node, FP8 weights
    or an FP8 KV cache on `lay`; or that nothing in one node does."""
    from pdplan.catalog.model_parts import dtype_bytes

    hints = []
    wide = _smallest_fitting(spec, gpu, weight_dtype, kv_dtype, tokens)
    if wide is not None:
        hints.append(f"{option} {wide} (the smallest TP/EP layout in the node that fits)")
    wider_weights = dtype_bytes(weight_dtype or spec.weight_dtype) > dtype_bytes("fp8")
    if wider_weights and fits(spec, gpu, lay, weight_dtype="fp8", kv_dtype=kv_dtype, tokens=tokens):
        hints.append(f"--weight-dtype fp8 on {lay}")
    if kv_dtype != "fp8" and fits(
        spec, gpu, lay, weight_dtype=weight_dtype, kv_dtype="fp8", tokens=tokens
    ):
        hints.append(f"--kv-dtype fp8 on {lay}")
    if not hints:
        return (
            f"no TP/EP layout within one {_span(gpu)}-GPU node fits {spec.name} on {gpu.name}: "
            f"{_across_nodes(spec, gpu, weight_dtype, kv_dtype, tokens)}, lower-precision "
            "weights or a GPU with more memory"
        )
    return "would fit: " + " or ".join(hints)


def _across_nodes(
    spec: ModelSpec, gpu: GPUSpec, weight_dtype: str | None, kv_dtype: str, tokens: int
) -> str:
    """PP across nodes, naming the shallowest pipeline of the widest TP in a node that fits."""
    tp = max(t for t in _HINT_TPS if t <= _span(gpu) and _valid(spec, gpu, Layout(tp=t)))
    for pp in _DEFAULT_PPS:
        lay = Layout(tp=tp, pp=pp)
        if fits(spec, gpu, lay, weight_dtype=weight_dtype, kv_dtype=kv_dtype, tokens=tokens):
            return f"PP across nodes ({lay} fits)"
    return "PP across more nodes"
