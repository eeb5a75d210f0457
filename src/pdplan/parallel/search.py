"""All valid layouts for N GPUs per instance, and the seed's composition rule of thumb (s3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan._text import gpus
from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError
from pdplan.parallel.checks import CP_MIN_CONTEXT, check_layout
from pdplan.parallel.layout import Layout

__all__ = [
    "SeedPick",
    "check_gpu_count",
    "divisors",
    "enumerate_layouts",
    "max_layout_gpus",
    "seed_rule",
]


def divisors(n: int) -> list[int]:
    """Positive divisors of n, ascending (trial division up to sqrt(n): cheap for n ~ 1e9)."""
    small: list[int] = []
    large: list[int] = []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def max_layout_gpus(model: ModelSpec, max_pp: int = 8, context_len: int | None = None) -> int:
    """The most GPUs any valid layout of `model` can use: PP x stage, with PP <= the layers
    (and max_pp), and a stage TP x DP x CP of at most heads x CP for a dense model (TP divides
    the attention heads, DP-attention only shares an MoE FFN, CP <= the context's tokens, one
    per rank, and only from CP_MIN_CONTEXT) or experts x expert-FFN width for an MoE model
    (its stage is expert TP x EP, EP dividing the experts, expert TP the expert FFN width)."""
    pp = min(max_pp, model.num_layers)
    cp = context_len if context_len is not None and context_len >= CP_MIN_CONTEXT else 1
    if model.moe is not None:
        return pp * model.moe.num_experts * model.moe.expert_intermediate_size
    return pp * max(model.num_heads, 1) * cp


def check_gpu_count(
    model: ModelSpec, n: int, max_pp: int = 8, context_len: int | None = None
) -> None:
    """Refuse a GPU count above max_layout_gpus, naming the factors of the bound."""
    top = max_layout_gpus(model, max_pp, context_len)
    if n <= top:
        return
    pp = min(max_pp, model.num_layers)
    if model.moe is not None:
        stage = f"{model.moe.num_experts} experts x {model.moe.expert_intermediate_size} "
        stage += "expert-FFN width (EP x expert TP)"
    else:
        cp = top // (pp * max(model.num_heads, 1))
        stage = f"TP {model.num_heads} (attention heads) x CP {cp:,} " + (
            f"(CP only from {CP_MIN_CONTEXT:,} tokens of context)"
            if cp == 1
            else "(one context token per rank)"
        )
    raise ConfigError(
        f"--gpus {n:,}: no layout of {model.name} uses that many GPUs; at most {top:,} = "
        f"PP {pp} (--max-pp, {model.num_layers} layers) x {stage}"
    )


def _candidates(model: ModelSpec, n: int, max_pp: int, context_len: int | None) -> list[Layout]:
    """Every (tp, dp, cp, pp, ep) with tp*dp*cp*pp == n that the cheap rules allow (TP divides
    the heads, PP <= layers, EP divides the experts, DP only for MoE, CP only for long
    context); check_layout then applies every rule."""
    moe = model.moe
    long_ctx = context_len is not None and context_len >= CP_MIN_CONTEXT
    heads = model.num_heads
    out: list[Layout] = []
    for pp in (p for p in range(1, min(max_pp, model.num_layers, n) + 1) if n % p == 0):
        stage = n // pp
        for tp in (t for t in divisors(heads if heads > 0 else stage) if stage % t == 0):
            rest = stage // tp  # dp * cp
            if moe is None:  # dense: no DP-attention, the rest is CP (or nothing)
                cps = [rest] if rest == 1 or long_ctx else []
            else:
                cps = divisors(rest) if long_ctx else [1]
            eps = divisors(math.gcd(stage, moe.num_experts)) if moe is not None else [1]
            for cp in cps:
                out += [Layout(tp=tp, dp=rest // cp, pp=pp, cp=cp, ep=ep) for ep in eps]
    return out


def enumerate_layouts(
    model: ModelSpec,
    n_gpus: int,
    *,
    scaleup_domain: int = 8,
    gpus_per_node: int = 8,
    max_pp: int = 8,
    context_len: int | None = None,
    up_to: bool = False,
    allow_warnings: bool = True,
) -> list[Layout]:
    """Valid layouts using exactly n_gpus GPUs (all counts 1..n_gpus with up_to=True).

    EP variants are listed for MoE models, DP-attention for MoE models, CP only when
    context_len >= CP_MIN_CONTEXT. SP is not enumerated (an on/off flag of any TP>1 layout).
    Order: fewer GPUs first, then pp, cp, dp, ep ascending (deterministic).
    """
    if n_gpus < 1:
        raise ConfigError(f"--gpus={n_gpus}: need at least 1 GPU per instance")
    top = max_layout_gpus(model, max_pp, context_len)  # no layout uses more
    counts = range(1, min(n_gpus, top) + 1) if up_to else [n_gpus] if n_gpus <= top else []
    found: list[Layout] = []
    for n in counts:
        for lay in _candidates(model, n, max_pp, context_len):
            chk = check_layout(
                model,
                lay,
                scaleup_domain=scaleup_domain,
                gpus_per_node=gpus_per_node,
                context_len=context_len,
            )
            if chk.ok and (allow_warnings or not chk.warnings):
                found.append(lay)
    found.sort(key=lambda x: (x.gpus, x.pp, x.cp, x.dp, x.ep, x.tp))
    return found


@dataclass(frozen=True)
class SeedPick:
    """The layout the seed's rule of thumb gives (None: it gives none here), and why."""

    layout: Layout | None
    reason: str


def _largest_tp(model: ModelSpec, n_gpus: int, per_node: int) -> int:
    for tp in sorted(divisors(n_gpus), reverse=True):
        if (
            tp <= per_node
            and check_layout(
                model, Layout(tp=tp), scaleup_domain=per_node, gpus_per_node=per_node
            ).ok
        ):
            return tp
    return 1


def _seed_ep(model: ModelSpec, stage: int) -> int:
    """The largest EP over a stage of `stage` GPUs that divides the experts and leaves an
    expert TP (stage / EP) dividing each expert's FFN width; ConfigError when none does."""
    moe = model.moe
    assert moe is not None
    width = moe.expert_intermediate_size
    fits = [d for d in divisors(stage) if moe.num_experts % d == 0 and width % (stage // d) == 0]
    if not fits:
        raise ConfigError(
            f"seed rule: no EP over a stage of {gpus(stage)} divides {moe.num_experts} experts "
            f"and leaves an expert TP dividing the expert FFN width {width}; choose a GPU "
            "count whose stage is a power of two (or give --layout)"
        )
    return max(fits)


def _tp_step(tp: int, n_gpus: int, per_node: int) -> str:
    """The seed rule's TP step as it came out: filling the node, or the largest TP that
    divides the heads and the GPU count when that is less (seed s3 assumes whole nodes)."""
    if tp == per_node:
        return f"TP={tp} fills the node (largest TP <= {per_node} dividing the heads)"
    cap = min(n_gpus, per_node)
    return f"TP={tp} (largest TP <= {cap} dividing the heads and the {gpus(n_gpus)})"


def seed_rule(
    model: ModelSpec, n_gpus: int, gpus_per_node: int = 8, context_len: int | None = None
) -> SeedPick:
    """Seed s3: TP fills the node -> PP across nodes -> EP for MoE -> SP/CP for long context."""
    tp = _largest_tp(model, n_gpus, gpus_per_node)
    rest = n_gpus // tp
    steps = [_tp_step(tp, n_gpus, gpus_per_node)]
    # stages past the first TP group sit in other nodes only when the GPUs outnumber a node
    # (3 GPUs of an 8-GPU node at TP=1 are 3 stages in one node)
    where = "across nodes" if n_gpus > gpus_per_node else "inside the node"
    pp, cp, ep, sp = rest, 1, 1, False
    long_ctx = context_len is not None and context_len >= CP_MIN_CONTEXT
    if long_ctx and tp > 1:
        sp = True
        steps.append(f"SP on for {context_len}-token context")
    if long_ctx and pp > 1:
        cp, pp = pp, 1
        steps.append(f"CP={cp} {where} instead of PP (context >= {CP_MIN_CONTEXT})")
    elif pp > 1:
        steps.append(f"PP={pp} {where}")
    if pp > model.num_layers:  # after the swap: a long context puts those nodes in CP
        raise ConfigError(f"{gpus(n_gpus)} need PP={pp} > {model.num_layers} layers")
    if model.moe is not None:
        ep = _seed_ep(model, tp * cp)
        if ep > 1:
            steps.append(f"EP={ep} over the stage's GPUs for the {model.moe.num_experts} experts")
    lay = Layout(tp=tp, pp=pp, cp=cp, ep=ep, sp=sp)
    return SeedPick(lay, f"seed rule for {gpus(n_gpus)}: " + "; ".join(steps) + f" -> {lay}")
