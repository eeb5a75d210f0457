"""Judge the cost model: predict measured serving rows and report absolute percentage errors."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.model_spec import ModelSpec
from pdplan.catalog.models import get_model, guessed_shape
from pdplan.errors import ConfigError, PdplanError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import Efficiency, get_efficiency
from pdplan.perf.estimate import Estimate, estimate_agg, estimate_disagg
from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.perf.memory import plan_memory
from pdplan.perf.repeats import repeat_spread
from pdplan.plan.kv_route import kv_route
from pdplan.plan.row_memory import row_kv_memory
from pdplan.plan.row_recipe import recipe_text, row_recipe_eff
from pdplan.plan.row_setup import (
    INFERENCEMAX_MARKERS,
    check_row_deployment,
    check_row_layouts,
    is_blackwell,
    is_inferencemax,
    kv_dtype_for,
)
from pdplan.plan.row_spec import draft_layers, row_cost_model, row_spec

__all__ = [
    "INFERENCEMAX_MARKERS",
    "MODES",
    "Prediction",
    "check_row_deployment",
    "check_row_layouts",
    "is_blackwell",
    "is_inferencemax",
    "kv_dtype_for",
    "predict_row",
    "prediction_record",
    "run_accuracy",
    "simulate_row",
    "summarize",
]

# The row modes run_accuracy can be limited to (None: every row).
MODES = ("agg", "disagg")


@dataclass(frozen=True)
class Prediction:
    row: MeasuredRow
    ttft_ms: float
    tpot_ms: float
    # KV tokens the deployment holds for running requests (aggregated or decode instances, all
    # of them together); 0 = not known
    kv_tokens: int = 0

    @property
    def kv_use(self) -> float:
        """C x (ISL + OSL) over kv_tokens: above 1 not every client's whole request fits at
        once, so clients queue for KV or are preempted (NaN when kv_tokens is not known)."""
        c = self.row.concurrency or 0
        return c * (self.row.isl + self.row.osl) / self.kv_tokens if self.kv_tokens else math.nan

    @property
    def ttft_ape(self) -> float:
        return abs(self.ttft_ms - self.row.ttft_ms) / self.row.ttft_ms * 100.0

    @property
    def tpot_ape(self) -> float:
        """NaN for a one-token row (MeasuredRow.tpot_ms NaN): judged on TTFT only."""
        return abs(self.tpot_ms - self.row.tpot_ms) / self.row.tpot_ms * 100.0


def _r(x: float, nd: int) -> float | None:
    """x rounded to nd places; None (an empty CSV cell, JSON null) where x is NaN."""
    return None if math.isnan(x) else round(x, nd)


def _spec_text(row: MeasuredRow) -> str:
    """How the row was predicted to decode: 'mtp:3:0.7' style, 'none' where its spec_decode
    column says so, '' where nothing says it was speculative."""
    spec = row_spec(row)
    if spec is None:
        return row.spec_decode  # 'none' or ''
    return f"{spec.method}:{spec.draft_tokens}:{spec.acceptance:g}"


def prediction_record(p: Prediction) -> dict[str, object]:
    """One predicted row as a flat record (pdplan accuracy --rows): setup, measured and
    predicted TTFT / TPOT in ms, and the absolute percentage errors."""
    r = p.row
    lay = r.layout if r.mode == "agg" else f"{r.prefill_layout}|{r.decode_layout}"
    return {
        "id": r.row_id,
        "backend": r.backend,
        "version": r.version,
        "model": r.model_path,
        "system": r.system,
        "mode": r.mode,
        "layout": str(lay),
        "isl": r.isl,
        "osl": r.osl,
        "concurrency": r.concurrency,
        "spec_decode": _spec_text(r),
        "spec_decode_from": ("column" if r.spec_decode else "recipe") if _spec_text(r) else "",
        "recipe": recipe_text(r),  # launch-recipe settings it ran with (plan/row_recipe.py)
        "measured_ttft_ms": round(r.ttft_ms, 3),
        "predicted_ttft_ms": round(p.ttft_ms, 3),
        "ttft_ape": round(p.ttft_ape, 2),
        "measured_tpot_ms": _r(r.tpot_ms, 4),
        "predicted_tpot_ms": _r(p.tpot_ms, 4),
        "tpot_ape": _r(p.tpot_ape, 2),
        "kv_use": _r(p.kv_use, 3),  # > 1: the clients' whole requests overfill the KV pool
    }


def _cost(
    row: MeasuredRow, model: ModelSpec, gpu: GPUSpec, layout: Layout, eff: Efficiency | None
) -> CostModel:
    eff = row_recipe_eff(row, eff or get_efficiency(row.backend, gpu.name, gpu.hbm_gib))
    return row_cost_model(row, model, gpu, layout, eff)


def _agg(
    row: MeasuredRow, model: ModelSpec, gpu: GPUSpec, eff: Efficiency | None = None
) -> tuple[Estimate, int]:
    if row.layout is None or not row.concurrency:  # refused by check_row_deployment first
        raise ConfigError("aggregated row without a layout or a concurrency")
    cm = _cost(row, model, gpu, row.layout, eff)
    frac, of_free = row_kv_memory(row, gpu, row.layout, cm)
    mem = plan_memory(
        model,
        gpu,
        row.layout,
        row.weight_dtype,
        kv_dtype_for(row),
        moe_dtype=row.moe_dtype,
        context=row.isl + row.osl,
        mem_fraction=frac,
        of_free=of_free,
        draft_layers=draft_layers(cm),
    )
    est = estimate_agg(
        cm,
        row.isl,
        row.osl,
        row.concurrency,
        kv_capacity_tokens=mem.kv_capacity_tokens,
    )
    return est, mem.kv_capacity_tokens


def _disagg(
    row: MeasuredRow, model: ModelSpec, gpu: GPUSpec, eff: Efficiency | None = None
) -> tuple[Estimate, int]:
    pl, dl, conc = row.prefill_layout, row.decode_layout, row.concurrency
    if pl is None or dl is None or not conc:  # refused by check_row_deployment first
        raise ConfigError("disaggregated row without layouts or a concurrency")
    kvd = kv_dtype_for(row)
    for lay, ctx in ((pl, row.isl), (dl, row.isl + row.osl)):  # each pool must hold its model
        frac, of_free = row_kv_memory(row, gpu, lay, _cost(row, model, gpu, lay, eff))
        mem = plan_memory(
            model, gpu, lay, row.weight_dtype, kvd, moe_dtype=row.moe_dtype, context=ctx,
            mem_fraction=frac, of_free=of_free,
        )  # fmt: skip
    # the path `pdplan estimate` takes: NVLink when P and D share a node (plan.kv_route)
    xfer = kv_route(model, gpu, row.isl, kvd, (pl, dl), (row.prefill_workers, row.decode_workers))
    est = estimate_disagg(
        _cost(row, model, gpu, pl, eff),
        _cost(row, model, gpu, dl, eff),
        row.isl,
        row.osl,
        conc,
        n_prefill=row.prefill_workers,
        n_decode=row.decode_workers,
        kv_transfer_s=xfer.time_s,
    )
    return est, mem.kv_capacity_tokens * row.decode_workers  # the decode pool's (last plan)


def predict_row(row: MeasuredRow, eff: Efficiency | None = None) -> Prediction:
    """Predict one measured row with the steady-state estimate (with `eff`, on the row's GPU,
    in place of the engine's efficiencies: plan.calibrate's trial values); PdplanError if
    impossible."""
    check_row_deployment(row)
    model = get_model(row.model_path)
    gpu = get_gpu(row.system)
    check_row_layouts(row, model, gpu)
    est, kv = (_agg if row.mode == "agg" else _disagg)(row, model, gpu, eff)
    tpot = est.tpot_s * 1e3 if row.osl > 1 else math.nan  # one token: no inter-token time
    return Prediction(row, est.ttft_s * 1e3, tpot, kv_tokens=kv)


def simulate_row(row: MeasuredRow, client: str = "fixed") -> Prediction:
    """Predict one measured row by simulating its closed loop (sim.simulate_closed_loop) with
    the benchmark client `client` (plan/accuracy_sim.py CLIENTS)."""
    from pdplan.plan.accuracy_sim import simulate_measured_row

    return simulate_measured_row(row, client=client)


def _stats(values: list[float]) -> dict[str, float | int]:
    """n / median / p90 of the defined values (NaN: a one-token row's TPOT, left out)."""
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    if a.size == 0:
        return {"n": 0}
    return {"n": int(a.size), "median": float(np.median(a)), "p90": float(np.percentile(a, 90))}


def summarize(preds: list[Prediction], key: Callable[[MeasuredRow], str]) -> dict[str, dict]:
    """Median / p90 APE of TTFT and TPOT per group."""
    groups: dict[str, list[Prediction]] = defaultdict(list)
    for p in preds:
        groups[key(p.row)].append(p)
    return {
        g: {
            "ttft_ape": _stats([p.ttft_ape for p in ps]),
            "tpot_ape": _stats([p.tpot_ape for p in ps]),
        }
        for g, ps in sorted(groups.items())
    }


def run_accuracy(
    path: str,
    *,
    mode: str | None = None,
    predictor: Callable[[MeasuredRow], Prediction] = predict_row,
    rows: Iterable[MeasuredRow | tuple[int, str]] | None = None,
    collect: list[Prediction] | None = None,
) -> dict:
    """Predict every row of a measured file; JSON-able report with errors and skipped rows.
    `collect`, when given, receives every Prediction (for per-row output)."""
    if mode is not None and mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; known: {', '.join(MODES)} (none: every row)")
    preds: list[Prediction] = [] if collect is None else collect
    skipped: dict[str, int] = defaultdict(int)
    examples: dict[str, str] = {}
    left_out = 0  # readable rows of the other mode (`mode`): neither predicted nor skipped
    for item in rows if rows is not None else read_measured(path):
        if isinstance(item, tuple):
            reason = f"unreadable row: {item[1]}"
            skipped[reason] += 1
            examples.setdefault(reason, f"line {item[0]}")
            continue
        if mode and item.mode != mode:
            left_out += 1
            continue
        try:
            preds.append(predictor(item))
        except PdplanError as exc:
            msg = str(exc)
            # "does not fit" rows group together; the example keeps the first one's shortfall
            reason = msg.split(":")[0] if "does not fit" in msg else msg
            skipped[reason] += 1
            examples.setdefault(reason, f"{item.row_id} ({msg})" if reason != msg else item.row_id)
    report: dict = {"file": path, "predicted": len(preds), "skipped": sum(skipped.values())}
    report["left_out_by_mode"] = left_out  # predicted + skipped + left out: every data line
    for m in ("agg", "disagg"):
        sub = [p for p in preds if p.row.mode == m]
        if sub:
            report[m] = {
                "overall": summarize(sub, lambda r: "all")["all"],
                "by_system": summarize(sub, lambda r: r.system),
                "by_model": summarize(sub, lambda r: r.model_path),
                "by_backend": summarize(sub, lambda r: r.backend),
                # rows predicted as speculative (their column, or a known MTP recipe) apart
                "by_decoding": summarize(sub, lambda r: _spec_text(r) or "plain"),
                # the file's own noise floor: its repeated setups against their own means (the
                # predicted rows: a skipped row's setup is not fully known, e.g. no worker counts;
                # keyed by the decoding predicted: a recipe's MTP run is not a plain run's repeat)
                "repeats": repeat_spread((p.row for p in sub), decoding=_spec_text),
            }
    report["skipped_reasons"] = [
        {"reason": r, "rows": n, "example": examples[r]} for r, n in sorted(skipped.items())
    ]
    report["shape_by_name"] = _shapes_by_name(preds)
    return report


def _shapes_by_name(preds: list[Prediction]) -> list[dict]:
    """Predicted rows whose model the catalog read by its name's family and size (a fine-tune
    named after its base: catalog.models guessed_shape), per model, so the table says so."""
    rows: dict[str, int] = defaultdict(int)
    for p in preds:
        rows[p.row.model_path] += 1
    out = []
    for path, n in sorted(rows.items()):
        spec = get_model(path)
        if guessed_shape(spec):
            out.append({"model": path, "read_as": spec.name, "rows": n})
    return out
