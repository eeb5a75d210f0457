"""Fit the cost model's efficiency factors per engine on measured serving rows (dev tool).

Usage: python benchmarks/fit_efficiency.py [--engine vllm] [--method estimate|sim] [--cv]
    [--maxiter 3] [--params a,b] [--subsample k] [--client fixed|random|auto] [--scale 0.2]
    [--loss cauchy|within]
Reads ../shared/data/calibration/measured_serving.csv (aggregated rows), fits the physical
parameters of perf/data/efficiency.yaml within their stated bounds by minimising a robust
(Cauchy) loss on log(predicted / measured) of TTFT and TPOT, or with --loss within the smooth
share of rows outside the issue's targets (TTFT 20 %, TPOT 12 %) (Powell), predicting with the
steady-state estimate or the simulator, and prints the values (to copy into the YAML) plus
leave-one-model-out errors (--cv). The fitting is pdplan.plan.calibrate's, as `pdplan
calibrate` runs it. Needs scipy (pip install -e ".[calibrate]"); the product does not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.measured import read_measured
from pdplan.plan.calibrate import (
    BOUNDS,
    Case,
    FitSetup,
    ape_stats,
    check_params,
    fit,
    fit_cases,
    held_out,
    ratios,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "calibration"


def report(cases: list[Case], values: dict[str, float], setup: FitSetup, label: str) -> None:
    s = ape_stats(ratios(cases, values, setup))
    print(
        f"{label}: n={len(cases)} TTFT median APE {s['ttft']['median']:.1f}% "
        f"TPOT median APE {s['tpot']['median']:.1f}%"
    )


def _setup(a: argparse.Namespace) -> FitSetup:
    names = [n for n in BOUNDS if not (a.client == "random" and n == "bench_rounds")]
    if a.params:  # the subset, in BOUNDS order (as this script always took it)
        keep = check_params(a.params.split(","))
        names = [n for n in names if n in keep]
    return FitSetup(tuple(names), a.method, a.client, a.scale, a.loss)


def main() -> int:
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
    setup = _setup(a)
    cases = fit_cases(read_measured(DATA / "measured_serving.csv"), a.engine, None, setup)[0]
    cases = cases[:: a.subsample]
    base = get_efficiency(a.engine)
    start = {n: getattr(base, n) for n in setup.params}
    report(cases, start, setup, "current")
    fitted = fit(cases, start, setup, a.maxiter)
    report(cases, fitted, setup, "fitted")
    for k, v in fitted.items():
        print(f"    {k}: {v:.4g}")
    if a.cv:  # each model refitted (one sweep, from the full fit) on the other models' rows
        by_model = held_out(cases, fitted, setup, 1, lambda c: c.row.model_path)
        for mp, ratio in by_model.items():
            s = ape_stats(ratio)
            print(
                f"  held out {mp}: n={len(ratio)} TTFT median APE {s['ttft']['median']:.1f}% "
                f"TPOT median APE {s['tpot']['median']:.1f}%"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
