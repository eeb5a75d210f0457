"""Validity rules of a layout for a model (seed s1-3), each refusal with its reason and numbers."""

from __future__ import annotations

from dataclasses import dataclass

from pdplan._text import gpus
from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError
from pdplan.parallel.comm import wide_ep
from pdplan.parallel.layout import Layout

__all__ = [
    "CP_MIN_CONTEXT",
    "LayoutCheck",
    "check_layout",
    "pp_bubble",
    "pp_stage_layers",
    "require_valid",
]

# Context parallelism below 32k tokens gains nothing: the ring pass of K/V blocks is hidden
# behind each block's attention only when a block's attention FLOPs (~ (n/cp)^2 per pair of
# blocks) outweigh its K/V bytes (~ n/cp), and below ~32k tokens attention is a minor share of
# prefill FLOPs (causal attention ~2*n*h FLOP per token per layer vs ~2*params per layer of GEMMs:
# Llama-70B at n=8k, 2*8192*8192 = 0.13 GFLOP vs 2*0.86e9 = 1.7 GFLOP, ~7%),
# so splitting the sequence buys little latency and costs a ring pass per layer. This is an
# assumption stated here (ring-attention papers evaluate CP at >= 32k-128k tokens).
CP_MIN_CONTEXT = 32_768  # tokens


@dataclass(frozen=True)
class LayoutCheck:
    """Verdict on one layout: errors refuse it, warnings allow it with a caution, notes inform."""

    layout: Layout
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def pp_stage_layers(num_layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage; an uneven split gives the first stages one extra layer."""
    if pp < 1 or num_layers < 1:
        raise ConfigError(f"PP={pp} over {num_layers} layers: both must be positive")
    if pp > num_layers:
        raise ConfigError(f"PP={pp} exceeds the {num_layers} layers (a stage needs >= 1 layer)")
    base, extra = divmod(num_layers, pp)
    return tuple(base + 1 if i < extra else base for i in range(pp))


def pp_bubble(pp: int, microbatches: int) -> float:
    """Idle share of a GPipe/1F1B pipeline: (p-1)/(m+p-1) for p stages and m micro-batches."""
    if pp < 1 or microbatches < 1:
        raise ConfigError(f"PP={pp}, micro-batches={microbatches}: both must be >= 1")
    return (pp - 1) / (microbatches + pp - 1)


def _check_tp(model: ModelSpec, lay: Layout, err: list[str], notes: list[str]) -> None:
    tp, heads = lay.tp, model.num_heads
    if heads % tp:
        err.append(f"TP={tp} does not divide {heads} attention heads")
        return
    if model.csa is not None and model.csa.o_groups % tp:
        err.append(f"TP={tp} does not divide {model.csa.o_groups} output-projection groups")
        return
    if model.mla is not None:
        if tp > 1:
            notes.append(
                f"MLA: the {model.mla.kv_lora_rank}+{model.mla.qk_rope_head_dim} latent "
                f"is replicated on all {tp} TP ranks (KV memory does not shrink with TP)"
            )
        return
    nkv = model.num_kv_heads
    if tp <= nkv and nkv % tp:
        err.append(f"TP={tp} does not divide {nkv} KV heads")
    elif tp > nkv:
        if tp % nkv:
            err.append(f"TP={tp} is not a multiple of {nkv} KV heads (cannot replicate evenly)")
        else:
            notes.append(f"KV heads replicated {tp // nkv}x: TP={tp} > {nkv} KV heads")
    la = model.linear_attn
    if la is not None and (la.num_value_heads % tp or la.num_key_heads % tp):
        err.append(
            f"TP={tp} does not divide the linear-attention heads "
            f"({la.num_key_heads} key / {la.num_value_heads} value)"
        )


def _check_moe(
    model: ModelSpec, lay: Layout, per_node: int, err: list[str], notes: list[str]
) -> None:
    moe = model.moe
    if moe is None:
        if lay.ep > 1:
            err.append(f"EP={lay.ep} on a dense model ({model.name} has no experts to split)")
        if lay.dp > 1:
            err.append(
                f"DP-attention DP={lay.dp} on a dense model: the FFN has no experts to "
                f"share, run {lay.dp} separate instances instead"
            )
        return
    if moe.num_experts % lay.ep:
        err.append(f"EP={lay.ep} does not divide {moe.num_experts} experts")
    if moe.expert_intermediate_size % lay.etp:
        err.append(
            f"expert TP={lay.etp} does not divide the expert FFN width "
            f"{moe.expert_intermediate_size}"
        )
    if lay.ep > 1 and not err:
        how = (
            "all-to-all dispatch / combine (wide EP)"
            if wide_ep(lay, per_node, moe.experts_per_token)
            else "tokens gathered / all-reduced as the engines' default MoE communication does"
        )
        notes.append(
            f"EP={lay.ep}: {moe.num_experts // lay.ep} experts per GPU group, {how}; the busiest "
            f"rank under uniform routing sets the step (hot experts cost more)"
        )
    if lay.dp > 1:
        notes.append(f"DP-attention: {lay.dp} attention groups of TP={lay.tp} share the MoE FFN")


def _check_span(lay: Layout, domain: int, per_node: int, warn: list[str], notes: list[str]) -> None:
    # A node wider than its NVLink domain (A100 PCIe / H100 NVL bridge pairs) joins the domains
    # over PCIe; perf.collectives.Links times any hop past the domain on the scale-out link.
    pcie = f"beyond the {domain}-GPU NVLink domain"
    modelled = "(the cost model times that leg at the scale-out link's bandwidth)"
    if lay.tp > domain and lay.tp <= per_node:
        warn.append(
            f"TP={lay.tp} spans {pcie}: TP traffic crosses PCIe inside the {per_node}-GPU "
            f"node, every layer's all-reduce leaves NVLink {modelled}"
        )
    elif lay.tp > domain:
        warn.append(
            f"TP={lay.tp} crosses nodes (scale-up domain {gpus(domain)}): the seed says "
            f"never do it, every layer's all-reduce goes over the NIC"
        )
    elif lay.stage_gpus > domain and lay.stage_gpus <= per_node:
        warn.append(
            f"stage spans {pcie}: TP*DP*CP={lay.stage_gpus} GPUs, so DP/CP/EP traffic "
            f"crosses PCIe inside the {per_node}-GPU node {modelled}"
        )
    elif lay.stage_gpus > domain:
        warn.append(
            f"stage crosses nodes: TP*DP*CP={lay.stage_gpus} GPUs exceed the "
            f"{domain}-GPU scale-up domain, so DP/CP/EP traffic goes over the NIC"
        )
    elif lay.tp > per_node:
        notes.append(
            f"TP={lay.tp} spans {lay.tp // per_node} trays inside one {domain}-GPU NVLink domain"
        )


def _check_cp_sp(lay: Layout, context_len: int | None, err: list[str], warn: list[str]) -> None:
    if lay.sp and lay.tp == 1:
        err.append("SP needs TP > 1 (it splits norms/residuals across the TP group)")
    if lay.cp == 1:
        return
    if context_len is None:
        warn.append(
            f"CP={lay.cp} without a context length: CP pays off only from {CP_MIN_CONTEXT} tokens"
        )
    elif context_len < CP_MIN_CONTEXT:
        err.append(
            f"CP={lay.cp} at {context_len} tokens gains nothing: below {CP_MIN_CONTEXT} "
            f"tokens attention is too small a share to hide the K/V ring pass"
        )
    elif lay.cp > context_len:
        err.append(f"CP={lay.cp} leaves a {context_len}-token context less than 1 token per rank")


def check_layout(
    model: ModelSpec,
    layout: Layout,
    *,
    scaleup_domain: int = 8,
    gpus_per_node: int = 8,
    context_len: int | None = None,
) -> LayoutCheck:
    """Apply the seed's validity rules (TP | heads, KV replication, PP split, EP | experts, CP)."""
    err: list[str] = []
    warn: list[str] = []
    notes: list[str] = []
    _check_tp(model, layout, err, notes)
    _check_moe(model, layout, gpus_per_node, err, notes)
    if layout.pp > model.num_layers:
        err.append(f"PP={layout.pp} exceeds the {model.num_layers} layers")
    elif model.num_layers % layout.pp:
        split = "/".join(str(n) for n in pp_stage_layers(model.num_layers, layout.pp))
        notes.append(f"PP={layout.pp} splits {model.num_layers} layers unevenly: {split}")
    _check_cp_sp(layout, context_len, err, warn)
    _check_span(layout, scaleup_domain, gpus_per_node, warn, notes)
    return LayoutCheck(layout, tuple(err), tuple(warn), tuple(notes))


def require_valid(model: ModelSpec, layout: Layout, **kw: int | None) -> LayoutCheck:
    """check_layout, raising ConfigError with the first error when the layout is refused."""
    chk = check_layout(model, layout, **kw)  # type: ignore[arg-type]
    if not chk.ok:
        raise ConfigError(f"layout {layout} for {model.name}: {chk.errors[0]}")
    return chk
