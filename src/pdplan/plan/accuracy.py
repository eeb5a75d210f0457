"""Judge the cost model: predict measured serving rows and report absolute percentage errors."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.model_spec import ModelSpec
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError, PdplanError
from pdplan.parallel.checks import require_valid
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.estimate import Estimate, estimate_agg, estimate_disagg
from pdplan.perf.kv_transfer import kv_transfer
from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.perf.memory import engine_kv_memory, plan_memory

__all__ = [
    "INFERENCEMAX_MARKERS",
    "Prediction",
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


@dataclass(frozen=True)
class Prediction:
    row: MeasuredRow
    ttft_ms: float
    tpot_ms: float

    @property
    def ttft_ape(self) -> float:
        return abs(self.ttft_ms - self.row.ttft_ms) / self.row.ttft_ms * 100.0

    @property
    def tpot_ape(self) -> float:
        return abs(self.tpot_ms - self.row.tpot_ms) / self.row.tpot_ms * 100.0


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
        "measured_ttft_ms": round(r.ttft_ms, 3),
        "predicted_ttft_ms": round(p.ttft_ms, 3),
        "ttft_ape": round(p.ttft_ape, 2),
        "measured_tpot_ms": round(r.tpot_ms, 4),
        "predicted_tpot_ms": round(p.tpot_ms, 4),
        "tpot_ape": round(p.tpot_ape, 2),
    }


# Rows whose source note names a GitHub workflow run come from InferenceMAX (InferenceX) sweeps.
INFERENCEMAX_MARKERS = ("workflow_run_id=", "wip=")


def is_inferencemax(row: MeasuredRow) -> bool:
    """Was the row measured by an InferenceMAX sweep (its source note names a workflow run)?"""
    return any(m in row.source for m in INFERENCEMAX_MARKERS)


def kv_dtype_for(row: MeasuredRow) -> str:
    """KV cache dtype of a measured setup: TensorRT-LLM quantised checkpoints run an FP8 KV
    cache (AIConfigurator's default kv quant for fp8/fp4 modes); vLLM and SGLang default to
    the model dtype (`--kv-cache-dtype auto`), i.e. BF16, except that SGLang stores a DSA
    model's cache (DeepSeek-V3.2, GLM-5) in fp8_e4m3 on Blackwell (SGLang server_args.py:
    "for Blackwell, we support fp8 only"; Blackwell = an NVIDIA part with FP4 tensor cores).
    InferenceMAX's recipes (InferenceX benchmarks/single_node/**) set `--kv-cache-dtype
    fp8_e4m3` in every SGLang launch of FP8 / FP4 checkpoints on B200 / B300 (DeepSeek-R1,
    GLM-5, Qwen3.5; not its BF16 Qwen3.5 ones, and only for some models on H200 and AMD parts,
    which keep the default), and `kv-cache-dtype: fp8` in its vLLM gpt-oss recipes on
    Blackwell (not H100 / H200); its other vLLM recipes changed over time (MiniMax-M2.5 and
    Kimi-K2.5 gained FP8 KV in later versions), so those keep the default. AMD's "-FP8-KV"
    checkpoints (amd/Llama-3.3-70B-Instruct-FP8-KV) carry KV-cache scales and are served with
    an FP8 cache."""
    if row.model_path.strip().lower().endswith("-fp8-kv"):
        return "fp8"
    if row.backend == "trtllm" and row.weight_dtype in ("fp8", "fp4"):
        return "fp8"
    if row.backend == "sglang" and _sglang_dsa_fp8(row):
        return "fp8"
    quantised = row.weight_dtype in ("fp8", "fp4")
    if row.backend == "sglang" and is_inferencemax(row) and quantised and is_blackwell(row):
        return "fp8"
    if row.backend == "vllm" and is_inferencemax(row) and "gpt-oss" in row.model_path.lower():
        return "fp8" if is_blackwell(row) else "bf16"
    return "bf16"


def _sglang_dsa_fp8(row: MeasuredRow) -> bool:
    try:
        mla = get_model(row.model_path).mla
    except PdplanError:
        return False
    return mla is not None and mla.index_topk > 0 and is_blackwell(row)


def is_blackwell(row: MeasuredRow) -> bool:
    """Is the row's GPU a Blackwell part (an NVIDIA GPU with FP4 tensor cores)?"""
    try:
        gpu = get_gpu(row.system)
    except PdplanError:
        return False
    return gpu.vendor == "NVIDIA" and gpu.fp4_tflops is not None


def check_row_layouts(row: MeasuredRow, model: ModelSpec, gpu: GPUSpec) -> None:
    """Refuse a row whose layout cannot exist as labelled (ConfigError with the reason), e.g.
    "TP=72 does not divide 128 attention heads": such rows (wide attention-DP deployments
    written as TP in some files) describe an unknown deployment, so they are not guessed."""
    for lay in (row.layout, row.prefill_layout, row.decode_layout):
        if lay is not None:
            require_valid(
                model, lay, scaleup_domain=gpu.scaleup_domain, gpus_per_node=gpu.gpus_per_node
            )
    lay = row.layout
    rack = gpu.scaleup_domain > 8  # NVL72-class: one NVLink domain across trays
    if row.mode == "agg" and lay is not None and rack and model.moe is not None:
        # InferenceMAX's GB200 "agg" rows of DeepSeek-R1 read tp 12..72 with moe_tp = tp and
        # no EP: tp is the GPU total of a disaggregated Dynamo run (tp36 = a 4-GPU prefill
        # worker + a 32-GPU wide-EP decode worker; tp12, 20, 28, 36, 52 divide no head count);
        # no engine splits every expert 16+ ways on a rack, so the deployment is unknown.
        if lay.tp > 8 and lay.ep == 1 and (lay.moe_tp or lay.tp) == lay.tp:
            raise ConfigError(
                f"aggregated row with TP={lay.tp} and the experts TP-split {lay.tp} ways "
                f"without EP on {gpu.name}: read as the GPU total of a disaggregated rack-scale "
                "run written as TP; the deployment is not specified"
            )


def _cost(row: MeasuredRow, model: ModelSpec, gpu: GPUSpec, layout: Layout) -> CostModel:
    return CostModel(
        model,
        gpu,
        layout,
        row.backend,
        row.weight_dtype,
        kv_dtype_for(row),
        moe_dtype=row.moe_dtype,
    )


def _agg(row: MeasuredRow, model: ModelSpec, gpu: GPUSpec) -> Estimate:
    assert row.layout is not None and row.concurrency
    frac, of_free = engine_kv_memory(row.backend)
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
    )
    return estimate_agg(
        _cost(row, model, gpu, row.layout),
        row.isl,
        row.osl,
        row.concurrency,
        kv_capacity_tokens=mem.kv_capacity_tokens,
    )


def _disagg(row: MeasuredRow, model: ModelSpec, gpu: GPUSpec) -> Estimate:
    pl, dl = row.prefill_layout, row.decode_layout
    if pl is None or dl is None or not row.prefill_workers or not row.decode_workers:
        raise ConfigError(
            "disaggregated row without prefill/decode worker counts or layouts: "
            "the deployment is not specified"
        )
    kvd = kv_dtype_for(row)
    frac, of_free = engine_kv_memory(row.backend)
    for lay, ctx in ((pl, row.isl), (dl, row.isl + row.osl)):  # each pool must hold its model
        plan_memory(
            model, gpu, lay, row.weight_dtype, kvd, moe_dtype=row.moe_dtype, context=ctx,
            mem_fraction=frac, of_free=of_free,
        )  # fmt: skip
    xfer = kv_transfer(
        model, row.isl, kv_dtype=kvd, gpu=gpu, path="nic", prefill_layout=pl, decode_layout=dl
    )
    conc = row.concurrency or (row.decode_batch or 1) * row.decode_workers
    return estimate_disagg(
        _cost(row, model, gpu, pl),
        _cost(row, model, gpu, dl),
        row.isl,
        row.osl,
        conc,
        n_prefill=row.prefill_workers,
        n_decode=row.decode_workers,
        kv_transfer_s=xfer.time_s,
    )


def predict_row(row: MeasuredRow) -> Prediction:
    """Predict one measured row with the steady-state estimate; PdplanError if impossible."""
    model = get_model(row.model_path)
    gpu = get_gpu(row.system)
    check_row_layouts(row, model, gpu)
    est = _agg(row, model, gpu) if row.mode == "agg" else _disagg(row, model, gpu)
    return Prediction(row, est.ttft_s * 1e3, est.tpot_s * 1e3)


def simulate_row(row: MeasuredRow, client: str = "fixed") -> Prediction:
    """Predict one measured row by simulating its closed loop (sim.simulate_closed_loop) with
    the benchmark client `client` (plan/accuracy_sim.py CLIENTS)."""
    from pdplan.plan.accuracy_sim import simulate_measured_row

    return simulate_measured_row(row, client=client)


def _stats(values: list[float]) -> dict[str, float | int]:
    a = np.asarray(values, dtype=float)
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
    preds: list[Prediction] = [] if collect is None else collect
    skipped: dict[str, int] = defaultdict(int)
    examples: dict[str, str] = {}
    for item in rows if rows is not None else read_measured(path):
        if isinstance(item, tuple):
            reason = f"unreadable row: {item[1]}"
            skipped[reason] += 1
            examples.setdefault(reason, f"line {item[0]}")
            continue
        if mode and item.mode != mode:
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
    for m in ("agg", "disagg"):
        sub = [p for p in preds if p.row.mode == m]
        if sub:
            report[m] = {
                "overall": summarize(sub, lambda r: "all")["all"],
                "by_system": summarize(sub, lambda r: r.system),
                "by_model": summarize(sub, lambda r: r.model_path),
                "by_backend": summarize(sub, lambda r: r.backend),
            }
    report["skipped_reasons"] = [
        {"reason": r, "rows": n, "example": examples[r]} for r, n in sorted(skipped.items())
    ]
    return report
