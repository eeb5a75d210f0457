"""Deployment strings -> instance specs: "tp4x2" (aggregated) or "4P:tp4+8D:tp8" (xPyD), each
pool optionally on its own GPU type ("4P:tp4@h100+8D:tp8@h200", "tp4x2@h100+tp8@b200")."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pdplan._text import foreign_digits
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.step import StepModel
from pdplan.sim.config import InstanceSpec
from pdplan.sim.placement import place

__all__ = ["MAX_INSTANCES", "Pool", "build_instances", "layout_syntax_error", "parse_deployment"]

# what a pool's maker returns: (step model, KV capacity tokens[, recurrent-state tokens[,
# window-layer charges]]), InstanceSpec's kv_capacity_tokens / kv_state_tokens / kv_window_tokens
Made = (
    tuple[StepModel, int]
    | tuple[StepModel, int, int]
    | tuple[StepModel, int, int, tuple[tuple[int, float], ...]]
)

# Most instances one simulated deployment may hold: 10,000 TP8 instances are 80,000 GPUs, past
# any single serving deployment; the simulator's per-instance state grows with the count
# (~17 KB an instance, measured: tp4x10000 peaks at 170 MB RSS), so a typo such as tp4x99999999
# is refused rather than left to allocate for hours
MAX_INSTANCES = 10_000


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
    if not isinstance(text, str):
        raise ConfigError(f"deployment must be a string such as 'tp4x2', not {text!r}")
    s = text.strip().lower()
    if not s:
        raise ConfigError("empty deployment; expected e.g. 'tp4x2' or '4P:tp4+8D:tp8'")
    odd = foreign_digits(text)
    if odd:  # '\d' and int() read '４P:tp4' as 4 prefill instances
        raise ConfigError(f"deployment {text!r}: {odd}")
    _refuse_comma(text)
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
    total = sum(p.count for p in pools)
    if total > MAX_INSTANCES:
        raise ConfigError(
            f"deployment {text!r} has {total:,} instances, over the simulator's "
            f"{MAX_INSTANCES:,}: simulate a slice of the cluster (e.g. 1/100 of the instances "
            "with 1/100 of the traffic)"
        )
    return pools


def _refuse_comma(text: str) -> None:
    """A ',' joins P / D pools only ('4P:tp4,8D:tp8'); 'tp4,ep4' is one layout's parts, or
    two aggregated pools ('+'): refuse it and say both spellings."""
    for chunk in text.strip().split("+"):
        pieces = [p.strip() for p in chunk.split(",")]
        if len(pieces) > 1 and not all(re.match(r"\d+[pd](:|@|$)", p, re.I) for p in pieces):
            raise ConfigError(
                f"deployment {text!r}: ',' joins only P / D pools ('4P:tp4,8D:tp8'); a layout's "
                f"parts are joined with '-' ({'-'.join(pieces)!r}), aggregated pools with '+' "
                f"({'+'.join(pieces)!r})"
            )


def _pool(part: str, text: str, typed: str) -> Pool:
    """One pool: 'NP:layout' / 'ND:layout' / '[agg:]layout[xN]', then an optional '@gpu'.
    `part` is lower-cased; `typed` is the same pool as the user spelt it (for messages)."""
    body, at, gpu = part.partition("@")
    if "@" in gpu:  # 'tp4@h100@h200': one GPU per pool ('expected a GPU name' misled)
        raise ConfigError(
            f"pool {typed!r} in deployment {text!r}: one '@GPU' per pool; a pool on other "
            "GPUs is its own pool ('1P:tp4@h100+1P:tp4@h200+...')"
        )
    if at and not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", gpu):
        raise ConfigError(f"pool {typed!r} in deployment {text!r}: expected a GPU name after '@'")
    _refuse_xpyd(body, text)
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
        x = re.fullmatch(r"(.+?)x(\d+)", m.group(3))
        if x:
            k, name = int(m.group(1)) * int(x.group(2)), m.group(2).upper()
            raise ConfigError(
                f"deployment {text!r}: pool {typed!r}: a P / D pool gives its instance count "
                f"before the colon, not as xN: write {k}{name}:{x.group(1)}"
            )
        lay = _layout(m.group(3), text, part, typed)
        return Pool(role, _count(int(m.group(1)), text), lay, gpu or None)
    if ":" in body.removeprefix("agg:"):
        raise ConfigError(
            f"cannot read pool {typed!r} in deployment {text!r}; use e.g. '4P:tp4+8D:tp8'"
        )
    body = body.removeprefix("agg:")
    m = re.fullmatch(r"(.+?)x(\d+)", body)
    layout, n = (m.group(1), int(m.group(2))) if m else (body, 1)
    _count_once(layout, n, text, typed)
    return Pool("agg", _count(n, text), _layout(layout, text, part, typed), gpu or None)


def _refuse_xpyd(body: str, text: str) -> None:
    """'2P4D' (the paper shorthand) is two pools: say how to write them."""
    xpyd = re.fullmatch(r"(\d+)([pd])(\d+)([pd])(:.*)?", body)
    if xpyd and xpyd.group(2) != xpyd.group(4):
        a, b = (xpyd.group(i) + xpyd.group(i + 1).upper() for i in (1, 3))
        raise ConfigError(
            f"deployment {text!r}: write each pool with its layout, joined by '+': "
            f"'{a}:tpN+{b}:tpN' (e.g. '{a}:tp4+{b}:tp4')"
        )


def _count_once(layout: str, n: int, text: str, typed: str) -> None:
    """An aggregated pool's instance count is one 'xN' at its end ('tp4x2'): refuse a second
    one ('tp4x2x2') or an 'x' without a count >= 1 after it ('tp4x-1')."""
    again = re.fullmatch(r"(.+?)((?:x\d+)+)", layout)
    if again:
        total = n * math.prod(int(c) for c in re.findall(r"\d+", again.group(2)))
        raise ConfigError(
            f"deployment {text!r}: pool {typed!r} gives its instance count (xN) more than "
            f"once; write it once, at the end: {again.group(1)}x{total}"
        )
    if re.search(r"x[^a-z]*$", layout):
        raise ConfigError(
            f"deployment {text!r}: cannot read layout {typed.partition('@')[0]!r}: the "
            "instance count after 'x' must be a whole number >= 1 (e.g. tp4x2)"
        )


def _count(n: int, text: str) -> int:
    if n < 1:
        raise ConfigError(f"instance count {n} in {text!r} must be >= 1")
    return n


def _layout(text: str, whole: str, part: str, typed: str) -> Layout:
    """Layout `text`, a piece of the lower-cased pool `part`; errors quote it as typed, and a
    run-together layout ('tp4ep4') is answered with the whole deployment spelt right."""
    at = part.find(text)
    if len(typed) == len(part) and at >= 0:
        text = typed[at : at + len(text)]
    fixed = _joined(text)
    if fixed is not None:
        spelt = whole.strip().replace(text, fixed, 1) if text in whole else fixed
        raise ConfigError(
            f"deployment {whole!r}: cannot read layout {text!r}: a layout's parts are joined "
            f"with '-': write {spelt!r}"
        )
    bad = layout_syntax_error(text)
    if bad is not None:
        raise ConfigError(f"deployment {whole!r}: cannot read layout {text!r}: {bad}")
    try:
        return Layout.parse(text)
    except ConfigError as exc:
        raise ConfigError(f"deployment {whole!r}: cannot read layout {text!r}: {exc}") from exc


# One layout part (parallel.layout.Layout.parse's keys), and what separates parts there
_PART = r"(?:tp|dp|adp|pp|etp|ep|moetp|cp)=?\d+|sp"
_SEP = r"[\s,\-_x]+"


def _joined(text: str) -> str | None:
    """'tp4ep4' -> 'tp4-ep4': the layout with run-together parts joined by '-' (as typed);
    None when no part is run together or one cannot be read."""
    fixed: list[str] = []
    for tok in (t for t in re.split(_SEP, text.strip(), flags=re.I) if t):
        if not re.fullmatch(f"(?:{_PART})+", tok, flags=re.I):
            return None
        fixed += re.findall(_PART, tok, flags=re.I)
    tokens = [t for t in re.split(_SEP, text.strip(), flags=re.I) if t]
    return "-".join(fixed) if len(fixed) > len(tokens) else None


def layout_syntax_error(text: str) -> str | None:
    """Why `text` cannot be read as one instance's layout, quoting it as typed ('tp4ep4':
    parts are joined with '-', write 'tp4-ep4'); None when its parts read (Layout.parse may
    still refuse their values)."""
    fixed = _joined(text)
    if fixed is not None:
        return f"a layout's parts are joined with '-': write {fixed!r}"
    for tok in (t for t in re.split(_SEP, text.strip(), flags=re.I) if t):
        if not re.fullmatch(_PART, tok, flags=re.I):
            return (
                f"cannot read layout part {tok!r}; use tpN, dpN, ppN, epN, etpN, cpN or sp, "
                "joined with '-' (e.g. tp8-ep8)"
            )
    return None


def build_instances(
    pools: list[Pool],
    make: Callable[[str, Layout, str | None], Made],
    gpus_per_node: int = 8,
    *,
    links: Callable[[str | None], Mapping[str, float]] | None = None,
    kv_senders: Callable[[Layout], int] | None = None,
    chunked: bool = False,
    placement: str = "packed",
    **spec_kw: object,
) -> tuple[InstanceSpec, ...]:
    """Instances in pool order, on NVLink nodes as `placement` puts them (sim.placement:
    "packed" pool after pool, "mixed" the roles interleaved so P and D share nodes; an
    instance never straddles a node unless it is larger than one; other hardware, other nodes).

    make(role, layout, gpu) -> (step model, KV capacity tokens[, a sequence's recurrent state
    in KV tokens: InstanceSpec.kv_state_tokens[, its window layers' charge:
    InstanceSpec.kv_window_tokens]]), gpu = the pool's '@GPU' or None.
    links(gpu) -> that GPU's InstanceSpec link speeds (nic_bytes_per_s, ...) and
    'gpus_per_node' (GPUs one NVLink domain joins; else `gpus_per_node`). kv_senders(layout)
    -> the GPUs that carry one request's KV under that layout (perf.kv_transfer.kv_shards;
    InstanceSpec.kv_senders; None: all the instance's GPUs). spec_kw go to every
    InstanceSpec (max_batch, chunk_budget, ...); without a prefill_token_budget / max_batch
    there, a step model's step_token_budget / max_running (perf.CostModel: the engine's
    defaults, per attention-DP rank) set them, and with `chunked` (the engine mixes prompt
    chunks into decode steps) an aggregated pool's chunk budget is its step_token_budget."""
    todo: list[dict[str, object]] = []  # InstanceSpec keywords of each instance, but its node
    items: list[tuple[str | None, int, str, int]] = []  # (hardware, GPUs, role, per node)
    per_role: dict[str, int] = {}
    for pool in pools:
        made = make(pool.role, pool.layout, pool.gpu)
        model, cap = made[0], made[1]
        hw = dict(links(pool.gpu)) if links else {}
        per_node = int(hw.pop("gpus_per_node", gpus_per_node))
        kw = {**hw, **spec_kw}
        for k, key in ((2, "kv_state_tokens"), (3, "kv_window_tokens")):
            if len(made) > k and key not in kw:
                kw[key] = made[k]
        if kv_senders is not None and "kv_senders" not in kw:
            kw["kv_senders"] = kv_senders(pool.layout)
        _engine_defaults(kw, model, chunked and pool.role == "agg")
        if pool.role != "agg":
            kw.pop("kv_reserve_output", None)  # an admission policy of aggregated instances
        g = pool.layout.gpus
        for _ in range(pool.count):
            k = per_role[pool.role] = per_role.get(pool.role, -1) + 1
            name = f"{pool.role}{k}:{pool.layout}" + (f"@{pool.gpu}" if pool.gpu else "")
            todo.append(
                {"role": pool.role, "step_model": model, "kv_capacity_tokens": cap, "gpus": g}
                | {"name": name, **kw}
            )
            items.append((pool.gpu, g, pool.role, per_node))
    nodes = place(items, placement)
    return tuple(InstanceSpec(node=n, **kw) for n, kw in zip(nodes, todo, strict=True))  # type: ignore[arg-type]


def _engine_defaults(kw: dict[str, object], model: StepModel, chunk: bool) -> None:
    """Fill the engine's token budget, max sequences and (when `chunk`) chunk budget into an
    instance's spec keywords where the caller did not set them."""
    if "prefill_token_budget" not in kw and hasattr(model, "step_token_budget"):
        kw["prefill_token_budget"] = int(model.step_token_budget)  # the engine's, x DP
    if "max_batch" not in kw and hasattr(model, "max_running"):
        kw["max_batch"] = int(model.max_running)  # the engine's max sequences, x DP
    if chunk and kw.get("chunk_budget") is None and hasattr(model, "step_token_budget"):
        kw["chunk_budget"] = int(model.step_token_budget)
