"""Deployment strings -> instance specs: "tp4x2" (aggregated) or "4P:tp4+8D:tp8" (xPyD), each
pool optionally on its own GPU type ("4P:tp4@h100+8D:tp8@h200", "tp4x2@h100+tp8@b200")."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.step import StepModel
from pdplan.sim.config import InstanceSpec

__all__ = ["Pool", "build_instances", "parse_deployment"]


@dataclass(frozen=True)
class Pool:
    """`count` instances of one role and layout, on `gpu` (a catalog name; None = the
    deployment's default GPU)."""

    role: str
    count: int
    layout: Layout
    gpu: str | None = None


def parse_deployment(text: str) -> list[Pool]:
    """'tp4x2' / 'agg:tp4x2' -> 2 aggregated tp4 instances; '4P:tp4+8D:tp8' or
    '4p:tp4,8d:tp8-pp2' -> 4 prefill tp4 + 8 decode tp8 instances. A pool may end in '@GPU'
    ('4P:tp4@h100+8D:tp8@h200'); aggregated pools may be several ('tp4x2@h100+tp8@b200')."""
    s = text.strip().lower()
    if not s:
        raise ConfigError("empty deployment; expected e.g. 'tp4x2' or '4P:tp4+8D:tp8'")
    parts = [p.strip() for p in re.split(r"[+,]", s)]
    for p in parts:
        if not p or re.search(r"\s", p):
            what = "an empty pool" if not p else f"a space inside pool {p!r}"
            raise ConfigError(
                f"deployment {text!r} has {what}; pools are joined by '+' (or ','), "
                "e.g. 'tp4x2' or '4P:tp4+8D:tp8'"
            )
    spelt = [p.strip() for p in re.split(r"[+,]", text.strip())]  # as typed, for messages
    pools = [_pool(p, text, typed) for p, typed in zip(parts, spelt, strict=True)]
    roles = {p.role for p in pools}
    if "agg" in roles and len(roles) > 1:
        raise ConfigError(
            f"deployment {text!r} mixes aggregated pools with P / D pools; use either "
            "'tp4x2' pools or '4P:tp4+8D:tp8'"
        )
    if "agg" not in roles and roles != {"prefill", "decode"}:
        raise ConfigError(f"deployment {text!r} needs both a P pool and a D pool")
    return pools


def _pool(part: str, text: str, typed: str) -> Pool:
    """One pool: 'NP:layout' / 'ND:layout' / '[agg:]layout[xN]', then an optional '@gpu'.
    `part` is lower-cased; `typed` is the same pool as the user spelt it (for messages)."""
    body, at, gpu = part.partition("@")
    if at and not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", gpu):
        raise ConfigError(f"pool {typed!r} in deployment {text!r}: expected a GPU name after '@'")
    if re.fullmatch(r"\d+[pd]:?", body):
        name, _, where = typed.partition("@")
        name = name.rstrip(":")
        raise ConfigError(
            f"deployment {text!r}: pool {name!r} has no layout: write it as "
            f"{name}:tp8{'@' + where if at else ''} (any layout: tpN, tpN-ppM, dpN-epN, ...)"
        )
    m = re.fullmatch(r"(\d+)([pd]):(.+)", body)
    if m:
        role = "prefill" if m.group(2) == "p" else "decode"
        lay = _layout(m.group(3), text, part, typed)
        return Pool(role, _count(int(m.group(1)), text), lay, gpu or None)
    if ":" in body.removeprefix("agg:"):
        raise ConfigError(
            f"cannot read pool {typed!r} in deployment {text!r}; use e.g. '4P:tp4+8D:tp8'"
        )
    body = body.removeprefix("agg:")
    m = re.fullmatch(r"(.+?)x(\d+)", body)
    layout, n = (m.group(1), int(m.group(2))) if m else (body, 1)
    return Pool("agg", _count(n, text), _layout(layout, text, part, typed), gpu or None)


def _count(n: int, text: str) -> int:
    if n < 1:
        raise ConfigError(f"instance count {n} in {text!r} must be >= 1")
    return n


def _layout(text: str, whole: str, part: str, typed: str) -> Layout:
    """Layout `text`, a piece of the lower-cased pool `part`; errors quote it as typed."""
    try:
        return Layout.parse(text.replace("x", "-"))
    except ConfigError as exc:
        at = part.find(text)
        if len(typed) == len(part) and at >= 0:
            text = typed[at : at + len(text)]
        raise ConfigError(f"deployment {whole!r}: cannot read layout {text!r}: {exc}") from exc


def build_instances(
    pools: list[Pool],
    make: Callable[[str, Layout, str | None], tuple[StepModel, int]],
    gpus_per_node: int = 8,
    *,
    links: Callable[[str | None], Mapping[str, float]] | None = None,
    chunked: bool = False,
    **spec_kw: object,
) -> tuple[InstanceSpec, ...]:
    """Instances in pool order, packed onto NVLink nodes (an instance never straddles a node
    unless it is larger than one; a pool on other hardware starts a new node).

    make(role, layout, gpu) -> (step model, KV capacity tokens), gpu = the pool's '@GPU' or
    None. links(gpu) -> that GPU's InstanceSpec link speeds (nic_bytes_per_s, ...) and
    'gpus_per_node' (GPUs one NVLink domain joins; else `gpus_per_node`). spec_kw go to every
    InstanceSpec (max_batch, chunk_budget, ...); without a prefill_token_budget / max_batch
    there, a step model's step_token_budget / max_running (perf.CostModel: the engine's
    defaults, per attention-DP rank) set them, and with `chunked` (the engine mixes prompt
    chunks into decode steps) an aggregated pool's chunk budget is its step_token_budget."""
    out: list[InstanceSpec] = []
    nodes = _Nodes()
    per_role: dict[str, int] = {}
    for pool in pools:
        model, cap = make(pool.role, pool.layout, pool.gpu)
        hw = dict(links(pool.gpu)) if links else {}
        per_node = int(hw.pop("gpus_per_node", gpus_per_node))
        kw = {**hw, **spec_kw}
        _engine_defaults(kw, model, chunked and pool.role == "agg")
        g = pool.layout.gpus
        for _ in range(pool.count):
            k = per_role[pool.role] = per_role.get(pool.role, -1) + 1
            out.append(
                InstanceSpec(
                    role=pool.role,
                    step_model=model,
                    kv_capacity_tokens=cap,
                    node=nodes.place(pool.gpu, g, per_node),
                    gpus=g,
                    name=f"{pool.role}{k}:{pool.layout}" + (f"@{pool.gpu}" if pool.gpu else ""),
                    **kw,
                )
            )  # type: ignore[arg-type]
    return tuple(out)


class _Nodes:
    """Packs instances onto NVLink nodes in order: an instance never straddles a node unless
    it is larger than one, and an instance on other hardware starts a new node."""

    def __init__(self) -> None:
        self.node, self.used, self.hw = 0, 0, ""

    def place(self, hw: str | None, gpus: int, per_node: int) -> int:
        """The node of the next instance of `gpus` GPUs on hardware `hw`."""
        if self.used and (hw != self.hw or self.used + gpus > per_node):
            self.node, self.used = self.node + 1, 0
        self.hw, node = hw, self.node
        self.used += gpus
        if self.used >= per_node:
            self.node, self.used = self.node + self.used // per_node, 0
        return node


def _engine_defaults(kw: dict[str, object], model: StepModel, chunk: bool) -> None:
    """Fill the engine's token budget, max sequences and (when `chunk`) chunk budget into an
    instance's spec keywords where the caller did not set them."""
    if "prefill_token_budget" not in kw and hasattr(model, "step_token_budget"):
        kw["prefill_token_budget"] = int(model.step_token_budget)  # the engine's, x DP
    if "max_batch" not in kw and hasattr(model, "max_running"):
        kw["max_batch"] = int(model.max_running)  # the engine's max sequences, x DP
    if chunk and kw.get("chunk_budget") is None and hasattr(model, "step_token_budget"):
        kw["chunk_budget"] = int(model.step_token_budget)
