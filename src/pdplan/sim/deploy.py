"""Deployment strings -> instance specs: "tp4x2" (aggregated) or "4P:tp4+8D:tp8" (xPyD)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.step import StepModel
from pdplan.sim.config import InstanceSpec

__all__ = ["Pool", "build_instances", "parse_deployment"]


@dataclass(frozen=True)
class Pool:
    """`count` instances of one role and layout."""

    role: str
    count: int
    layout: Layout


def parse_deployment(text: str) -> list[Pool]:
    """'tp4x2' / 'agg:tp4x2' -> 2 aggregated tp4 instances; '4P:tp4+8D:tp8' or
    '4p:tp4,8d:tp8-pp2' -> 4 prefill tp4 + 8 decode tp8 instances."""
    s = text.strip().lower()
    if not s:
        raise ConfigError("empty deployment; expected e.g. 'tp4x2' or '4P:tp4+8D:tp8'")
    parts = [p for p in re.split(r"[+,\s]+", s) if p]
    if len(parts) == 1 and not re.match(r"^\d+[pd]:", parts[0]):
        body = parts[0].removeprefix("agg:")
        m = re.fullmatch(r"(.+?)x(\d+)", body)
        layout, n = (m.group(1), int(m.group(2))) if m else (body, 1)
        return [Pool("agg", _count(n, text), _layout(layout, text))]
    pools = []
    for p in parts:
        m = re.fullmatch(r"(\d+)([pd]):(.+)", p)
        if not m:
            raise ConfigError(
                f"cannot read pool {p!r} in deployment {text!r}; use e.g. '4P:tp4+8D:tp8'"
            )
        role = "prefill" if m.group(2) == "p" else "decode"
        pools.append(Pool(role, _count(int(m.group(1)), text), _layout(m.group(3), text)))
    roles = {p.role for p in pools}
    if roles != {"prefill", "decode"}:
        raise ConfigError(f"deployment {text!r} needs both a P pool and a D pool")
    return pools


def _count(n: int, text: str) -> int:
    if n < 1:
        raise ConfigError(f"instance count {n} in {text!r} must be >= 1")
    return n


def _layout(text: str, whole: str) -> Layout:
    try:
        return Layout.parse(text.replace("x", "-"))
    except ConfigError as exc:
        raise ConfigError(f"deployment {whole!r}: {exc}") from exc


def build_instances(
    pools: list[Pool],
    make: Callable[[str, Layout], tuple[StepModel, int]],
    gpus_per_node: int = 8,
    **spec_kw: object,
) -> tuple[InstanceSpec, ...]:
    """Instances in pool order, packed onto nodes of gpus_per_node GPUs (an instance never
    straddles a node unless it is larger than one). make(role, layout) -> (step model, KV
    capacity tokens). spec_kw go to every InstanceSpec (max_batch, chunk_budget, ...); without a
    prefill_token_budget / max_batch there, a step model's step_token_budget / max_running
    (perf.CostModel: the engine's defaults, per attention-DP rank) set them."""
    out: list[InstanceSpec] = []
    node, used = 0, 0
    for pool in pools:
        model, cap = make(pool.role, pool.layout)
        kw = dict(spec_kw)
        if "prefill_token_budget" not in kw and hasattr(model, "step_token_budget"):
            kw["prefill_token_budget"] = int(model.step_token_budget)  # the engine's, x DP
        if "max_batch" not in kw and hasattr(model, "max_running"):
            kw["max_batch"] = int(model.max_running)  # the engine's max sequences, x DP
        g = pool.layout.gpus
        for k in range(pool.count):
            if used and used + g > gpus_per_node:
                node, used = node + 1, 0
            out.append(
                InstanceSpec(
                    role=pool.role,
                    step_model=model,
                    kv_capacity_tokens=cap,
                    node=node,
                    gpus=g,
                    name=f"{pool.role}{k}:{pool.layout}",
                    **kw,
                )
            )  # type: ignore[arg-type]
            used += g
            if used >= gpus_per_node:
                node, used = node + (used // gpus_per_node), 0
    return tuple(out)
