"""Fit the cost model's efficiency factors per engine on measured serving rows (dev tool).

Usage: python benchmarks/fit_efficiency.py [--engine vllm] [--method estimate|sim] [--cv]
    [--maxiter 3] [--params a,b] [--subsample k] [--client fixed|random|auto] [--scale 0.2]
    [--loss cauchy|within]
Reads ../shared/data/calibration/measured_serving.csv (aggregated rows), fits the physical
parameters of perf/data/efficiency.yaml within their stated bounds by minimising a robust
(Cauchy) loss on log(predicted / measured) of TTFT and TPOT, or with --loss within the smooth
share of rows outside the issue's targets (TTFT 20 %, TPOT 12 %) (Powell), predicting with the
steady-state estimate or the simulator, and prints the values (to copy into the YAML) plus
leave-one-model-out errors (--cv). Needs scipy (pip install -e ".[calibrate]"); the product
does not.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from pdplan.catalog import get_gpu, get_model
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.estimate import estimate_agg
from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.perf.memory import plan_memory
from pdplan.plan.accuracy import kv_dtype_for
from pdplan.plan.row_spec import row_cost_model

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "calibration"
# name: (low, high, log-scale?) -- the physical bounds documented in efficiency.yaml
BOUNDS = {
    "gemm_eta": (0.5, 0.85, False),
    "gemm_m_half": (8.0, 256.0, True),
    "mem_eta": (0.6, 0.92, False),
    "fp8_stream_eta": (0.5, 1.0, False),
    "attn_eta": (0.3, 0.8, False),
    "attn_mem_eta": (0.4, 0.92, False),
    "moe_eta": (0.4, 1.0, False),
    "kernel_s": (5e-7, 1e-5, True),
    "step_s": (1e-4, 1e-2, True),
    "seq_s": (1e-7, 5e-5, True),
    "prompt_token_s": (1e-8, 3e-5, True),
    "coll_alpha_s": (2e-6, 3e-5, True),
    "coll_eta": (0.5, 0.9, False),
    "ttft_overhead_s": (1e-3, 0.3, True),
    "bench_rounds": (1.0, 20.0, True),
}
NAMES = list(BOUNDS)
METHOD: dict[str, object] = {"name": "estimate", "client": "fixed", "scale": 0.2, "loss": "cauchy"}


def to_params(x: np.ndarray) -> dict[str, float]:
    out = {}
    for v, n in zip(x, NAMES, strict=True):
        lo, hi, log = BOUNDS[n]
        s = 1 / (1 + math.exp(-float(v)))
        out[n] = (
            math.exp(math.log(lo) + s * (math.log(hi) - math.log(lo)))
            if log
            else lo + s * (hi - lo)
        )
    return out


def from_params(p: dict[str, float]) -> np.ndarray:
    x = []
    for n in NAMES:
        lo, hi, log = BOUNDS[n]
        v = min(max(getattr(p, n) if not isinstance(p, dict) else p[n], lo * 1.0001), hi * 0.9999)
        s = (
            (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
            if log
            else (v - lo) / (hi - lo)
        )
        x.append(math.log(s / (1 - s)))
    return np.array(x)


def load_rows(engine: str) -> list[tuple[MeasuredRow, object, object]]:
    rows = []
    for r in read_measured(DATA / "measured_serving.csv"):
        if isinstance(r, tuple) or r.mode != "agg" or r.backend != engine:
            continue
        rows.append((r, get_model(r.model_path), get_gpu(r.system)))
    return rows


def _on_gpu(eff, r, g):  # type: ignore[no-untyped-def]
    """`eff`'s fitted values on top of the engine's per-GPU defaults for the row's GPU (the
    token budget by GPU memory, per-GPU blocks), as the product builds them."""
    base = get_efficiency(r.backend, g.name, g.hbm_gib)
    return replace(base, **{n: getattr(eff, n) for n in NAMES})


def predict(rows, eff) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = np.empty((len(rows), 2))
    if METHOD["name"] == "sim":
        from pdplan.plan.accuracy_sim import simulate_measured_row

        for i, (r, _, g) in enumerate(rows):
            try:
                p = simulate_measured_row(r, _on_gpu(eff, r, g), str(METHOD["client"]))
                out[i] = (p.ttft_ms / r.ttft_ms, p.tpot_ms / r.tpot_ms)
            except Exception:
                out[i] = (np.nan, np.nan)
        return out
    for i, (r, m, g) in enumerate(rows):
        kvd = kv_dtype_for(r)
        try:
            cm = row_cost_model(r, m, g, r.layout, _on_gpu(eff, r, g))
            mem = plan_memory(
                m, g, r.layout, r.weight_dtype, kvd, moe_dtype=r.moe_dtype, context=r.isl + r.osl
            )
            e = estimate_agg(
                cm, r.isl, r.osl, r.concurrency, kv_capacity_tokens=mem.kv_capacity_tokens
            )
            out[i] = (e.ttft_s * 1e3 / r.ttft_ms, e.tpot_s * 1e3 / r.tpot_ms)
        except Exception:
            out[i] = (np.nan, np.nan)
    return out


# --loss within: the accuracy targets (TTFT within 20 %, TPOT within 12 %) as log bands
WITHIN = np.log(np.array([1.20, 1.12]))


def loss(x, rows, base) -> float:  # type: ignore[no-untyped-def]
    eff = replace(base, **to_params(x))
    ratio = predict(rows, eff)
    err = np.abs(np.log(np.where(np.isfinite(ratio), ratio, 10.0)))
    if METHOD["loss"] == "within":
        # smooth share of rows outside the target bands (a logistic step 0.03 wide in log
        # error): what a median-error target counts, still differentiable for the search
        return float(np.mean(1.0 / (1.0 + np.exp(-(err - WITHIN) / 0.03))))
    # Cauchy loss on log error (scale 0.2 unless --scale): robust to the rows no model explains
    return float(np.mean(np.log1p((err / float(METHOD["scale"])) ** 2)))


def report(rows, eff, label: str) -> None:  # type: ignore[no-untyped-def]
    ratio = predict(rows, eff)
    ape = np.abs(ratio - 1) * 100
    print(
        f"{label}: n={len(rows)} TTFT median APE {np.nanmedian(ape[:, 0]):.1f}% "
        f"TPOT median APE {np.nanmedian(ape[:, 1]):.1f}%"
    )


def main() -> int:
    from scipy.optimize import minimize

    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--maxiter", type=int, default=3)
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--method", choices=("estimate", "sim"), default="estimate")
    ap.add_argument("--params", default="", help="comma-separated subset of parameters to fit")
    ap.add_argument("--subsample", type=int, default=1, help="use every k-th row")
    ap.add_argument("--client", default="fixed", help="benchmark client for --method sim")
    ap.add_argument("--scale", type=float, default=0.2, help="Cauchy scale of the log error")
    ap.add_argument("--loss", choices=("cauchy", "within"), default="cauchy")
    a = ap.parse_args()
    METHOD.update(name=a.method, client=a.client, scale=a.scale, loss=a.loss)
    if a.client == "random":  # the client fixes the requests per client: nothing to fit
        BOUNDS.pop("bench_rounds", None)
        NAMES[:] = list(BOUNDS)
    if a.params:
        keep = a.params.split(",")
        for n in list(BOUNDS):
            if n not in keep:
                del BOUNDS[n]
        NAMES[:] = list(BOUNDS)
    rows = load_rows(a.engine)[:: a.subsample]
    base = get_efficiency(a.engine)
    report(rows, base, "current")
    res = minimize(
        loss,
        from_params(base),
        args=(rows, base),
        method="Powell",
        options={"maxiter": a.maxiter, "xtol": 1e-2, "ftol": 1e-3},
    )
    fitted = to_params(res.x)
    report(rows, replace(base, **fitted), "fitted")
    for k, v in fitted.items():
        print(f"    {k}: {v:.4g}")
    if a.cv:
        models = sorted({r.model_path for r, _, _ in rows})
        for mp in models:
            train = [t for t in rows if t[0].model_path != mp]
            test = [t for t in rows if t[0].model_path == mp]
            rcv = minimize(
                loss,
                res.x,
                args=(train, base),
                method="Powell",
                options={"maxiter": 1, "xtol": 1e-2, "ftol": 1e-3},
            )
            report(test, replace(base, **to_params(rcv.x)), f"  held out {mp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
