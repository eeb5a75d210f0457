"""All valid layouts for N GPUs per instance, and the seed's composition rule of thumb (s3)."""

from __future__ import annotations

from dataclasses import dataclass

from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError
from pdplan.parallel.checks import CP_MIN_CONTEXT, check_layout
from pdplan.parallel.layout import Layout

__all__ = ["SeedPick", "divisors", "enumerate_layouts", "seed_rule"]


def divisors(n: int) -> list[int]:
    """Positive divisors of n, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def _candidates(model: ModelSpec, n: int, max_pp: int, context_len: int | None) -> list[Layout]:
    """Every (tp, dp, cp, pp, ep) with tp*dp*cp*pp == n, before the validity rules."""
    shared_ffn = model.moe is not None  # DP-attention only where an MoE FFN is shared
    long_ctx = context_len is not None and context_len >= CP_MIN_CONTEXT
    out: list[Layout] = []
    for pp in divisors(n):
        if pp > max_pp:
            continue
        for cp in divisors(n // pp) if long_ctx else [1]:
            for dp in divisors(n // (pp * cp)) if shared_ffn else [1]:
                tp = n // (pp * cp * dp)
                stage = tp * dp * cp
                eps = divisors(stage) if model.moe is not None else [1]
                out += [Layout(tp=tp, dp=dp, pp=pp, cp=cp, ep=ep) for ep in eps]
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
    counts = range(1, n_gpus + 1) if up_to else [n_gpus]
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
    """The layout the seed's rule of thumb gives, and why, in one sentence."""

    layout: Layout
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


def seed_rule(
    model: ModelSpec, n_gpus: int, gpus_per_node: int = 8, context_len: int | None = None
) -> SeedPick:
    """Seed s3: TP fills the node -> PP across nodes -> EP for MoE -> SP/CP for long context."""
    tp = _largest_tp(model, n_gpus, gpus_per_node)
    rest = n_gpus // tp
    steps = [f"TP={tp} fills the node (largest TP <= {gpus_per_node} dividing the heads)"]
    pp, cp, ep, sp = rest, 1, 1, False
    if pp > model.num_layers:
        raise ConfigError(f"{n_gpus} GPUs need PP={pp} > {model.num_layers} layers")
    long_ctx = context_len is not None and context_len >= CP_MIN_CONTEXT
    if long_ctx and tp > 1:
        sp = True
        steps.append(f"SP on for {context_len}-token context")
    if long_ctx and pp > 1:
        cp, pp = pp, 1
        steps.append(f"CP={cp} across nodes instead of PP (context >= {CP_MIN_CONTEXT})")
    elif pp > 1:
        steps.append(f"PP={pp} across nodes")
    if model.moe is not None:
        ep = max(d for d in divisors(tp * cp) if model.moe.num_experts % d == 0)
        if ep > 1:
            steps.append(f"EP={ep} over the stage's GPUs for the {model.moe.num_experts} experts")
    lay = Layout(tp=tp, pp=pp, cp=cp, ep=ep, sp=sp)
    return SeedPick(lay, f"seed rule for {n_gpus} GPUs: " + "; ".join(steps) + f" -> {lay}")
