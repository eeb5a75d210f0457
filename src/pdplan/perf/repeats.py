"""Measurement repeats: how far a measured file's repeated setups disagree among themselves."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import fields
from typing import Any

import numpy as np

from pdplan.perf.measured import MeasuredRow

__all__ = ["exact_copies", "repeat_spread", "setup_key"]

# MeasuredRow fields that name a row rather than describe its setup or measurement
_NAMING = ("line", "row_id", "source")

# Two rows whose TTFT and TPOT agree to this relative tolerance are one measurement filed twice
# (the same run copied into several source files), not two runs: 1e-3, i.e. 0.1 %.
SAME_VALUE_RTOL = 1e-3


# How a row decodes as its predictor reads it ('mtp:3:0.7', 'none', ''): a caller that infers
# speculative decoding beyond the spec_decode column (plan.row_spec's known MTP recipes) passes
# its reading, so a recipe's MTP run and a plain run of one layout are two setups, not repeats.
Decoding = Callable[[MeasuredRow], str]


def setup_key(
    row: MeasuredRow, with_version: bool = False, decoding: Decoding | None = None
) -> tuple[Hashable, ...]:
    """What a predictor is told about a row: mode, engine, model, GPU, lengths, clients,
    layouts, worker counts, dtypes and speculative decoding (`decoding(row)`, else the row's
    spec_decode column; the engine version only when `with_version`). Where and when it was
    measured (the source note) is not part of it."""
    return (
        row.mode,
        row.backend,
        row.model_path,
        row.system,
        row.isl,
        row.osl,
        row.concurrency,
        str(row.layout),
        str(row.prefill_layout),
        str(row.decode_layout),
        row.prefill_workers,
        row.decode_workers,
        row.weight_dtype,
        row.moe_dtype,
        decoding(row) if decoding else row.spec_decode,
    ) + ((row.version,) if with_version else ())


def _distinct(values: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (TTFT, TPOT) pairs with copies of one measurement (within SAME_VALUE_RTOL) dropped."""
    out: list[tuple[float, float]] = []
    for t, p in sorted(values):
        if not any(_close(t, u) and _close(p, q) for u, q in out):
            out.append((t, p))
    return out


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= SAME_VALUE_RTOL * max(abs(a), abs(b))


def _oracle_apes(values: list[float]) -> list[float]:
    """Absolute % error of each value against the geometric mean of all of them (NaN and
    non-positive values left out; fewer than two left: none)."""
    v = [x for x in values if x > 0 and math.isfinite(x)]
    if len(v) < 2:
        return []
    gm = math.exp(sum(math.log(x) for x in v) / len(v))  # geometric mean, ms
    return [abs(gm - x) / x * 100.0 for x in v]  # APE as pdplan accuracy defines it, %


def _stats(apes: list[float]) -> dict[str, float | int]:
    if not apes:
        return {"n": 0}
    a = np.asarray(apes, dtype=float)
    return {"n": int(a.size), "median": float(np.median(a)), "p90": float(np.percentile(a, 90))}


def repeat_spread(
    rows: Iterable[MeasuredRow], with_version: bool = False, decoding: Decoding | None = None
) -> dict[str, object]:
    """Setups measured more than once (setup_key with `decoding`; copies of one measurement
    count once) and how far each of their measurements lies from the setup's own geometric
    mean: n / median / p90 absolute % error for TTFT and TPOT. The mean is fitted to the very
    values it is scored on, so no predictor that sees only the setup can do better on these
    rows: the figures are a floor (run-to-run noise, and engine versions unless `with_version`)."""
    groups: dict[tuple[Hashable, ...], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        groups[setup_key(r, with_version, decoding)].append((r.ttft_ms, r.tpot_ms))
    ttft: list[float] = []
    tpot: list[float] = []
    setups = 0
    for vals in groups.values():
        d = _distinct(vals)
        if len(d) < 2:
            continue
        setups += 1
        ttft += _oracle_apes([t for t, _ in d])
        tpot += _oracle_apes([p for _, p in d])
    return {"setups": setups, "ttft_ape": _stats(ttft), "tpot_ape": _stats(tpot)}


def exact_copies(rows: Iterable[MeasuredRow]) -> dict[str, Any]:
    """Rows that repeat an earlier row exactly (same setup and measured TTFT / TPOT; id, line
    and source aside): `rows`, how many, and `example`, 'ID = EARLIER_ID' of the first. A
    copied row counts twice in a median error or a fit, as a true repeat would, so callers
    keep them and warn."""
    first: dict[tuple[Any, ...], str] = {}
    extra: list[str] = []
    for r in rows:
        key = tuple(
            None if isinstance(v, float) and math.isnan(v) else v  # NaN: a one-token TPOT
            for v in (getattr(r, f.name) for f in fields(r) if f.name not in _NAMING)
        )
        if key in first:
            extra.append(f"{r.row_id} = {first[key]}")
        else:
            first[key] = r.row_id
    return {"rows": len(extra), "example": extra[0] if extra else None}
