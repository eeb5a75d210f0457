"""How much the benchmark client's behaviour matters: simulate measured rows two ways (dev tool).

Usage: python benchmarks/client_replay.py [--subsample 3] [--prefill-scale K]
Reads ../shared/data/calibration/measured_serving.csv (aggregated rows). Rows whose source note
names a GitHub-workflow run (`workflow_run_id=` / `wip=`) come from InferenceMAX sweeps, whose
client is vLLM's benchmark_serving.py with `--num-prompts $((CONC * 10)) --random-range-ratio
0.8` (InferenceMAX benchmarks/*.sh, .github/workflows/full-sweep-tmpl.yml): 10 requests per
client, input and output lengths uniform in [0.8 L, L]. Each row is simulated
  fixed:    as `pdplan accuracy --simulate` does (fixed ISL/OSL, bench_rounds x C requests),
  replayed: with that client (10 x C requests, random lengths) for InferenceMAX rows,
and the script prints, per engine and client, the median TTFT / TPOT absolute % error and the
median log(predicted / measured). Then, for every InferenceMAX config measured at C = 4 with
ISL 1024 and 8192, the measured TTFT increase against the modelled prefill-time increase.
--prefill-scale K makes every step's prompt work K times slower (what the step costs beyond
its decodes), to test whether slow prefill explains the replayed errors.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import PdplanError
from pdplan.perf.costmodel import CostModel
from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.perf.step import BatchShape
from pdplan.plan.accuracy import kv_dtype_for
from pdplan.plan.accuracy_sim import _instance, simulate_measured_row
from pdplan.sim import simulate_closed_loop

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/calibration/measured_serving.csv"
IMAX = ("workflow_run_id=", "wip=")  # InferenceMAX source-note markers
IMAX_RANGE, IMAX_PER_CLIENT = 0.8, 10  # --random-range-ratio 0.8, --num-prompts 10 x CONC


def scale_prefill(k: float) -> None:
    """Make the prompt share of every step k times longer (this process only; dev diagnostic)."""
    orig = CostModel.step_time

    def step_time(self: CostModel, shape: BatchShape) -> float:
        t = orig(self, shape)
        if shape.prefill_tokens <= 0:
            return t
        dec = BatchShape(0, 0.0, 0, shape.decode_seqs, shape.decode_ctx)
        return t + (k - 1.0) * (t - (orig(self, dec) if shape.decode_seqs else 0.0))

    CostModel.step_time = step_time  # type: ignore[method-assign]


def notes() -> list[str]:
    import csv

    with DATA.open(newline="") as fh:
        return [r["silicon_data_source"] for r in csv.DictReader(fh)]


def replay(row: MeasuredRow) -> tuple[float, float]:
    """(TTFT ms, TPOT ms) of the row simulated with the InferenceMAX client."""
    spec, cm = _instance(row, "agg", "agg")
    model, conc = get_model(row.model_path), row.concurrency or 1
    out = simulate_closed_loop(
        [spec],
        row.isl,
        row.osl,
        conc,
        n_requests=min(20_000, IMAX_PER_CLIENT * conc),
        warmup=0,
        range_ratio=IMAX_RANGE,
        kv_bytes_per_token=model.kv_bytes_per_token(kv_dtype_for(row)),
        kv_layers=model.num_layers,
    )
    return (out["ttft_s"]["mean"] + cm.eff.ttft_overhead_s) * 1e3, out["tpot_s"]["mean"] * 1e3


def errors(pairs: list[tuple[float, float]]) -> str:
    r = np.array(pairs)
    ape, log = np.abs(r - 1) * 100, np.log(r)
    return (
        f"TTFT {np.median(ape[:, 0]):5.1f}% (log {np.median(log[:, 0]):+.2f})  "
        f"TPOT {np.median(ape[:, 1]):5.1f}% (log {np.median(log[:, 1]):+.2f})"
    )


def compare(rows: list[MeasuredRow], src: list[str]) -> None:
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        client = "imax" if any(m in src[r.line - 2] for m in IMAX) else "other"
        try:
            f = simulate_measured_row(r)
            groups[(r.backend, client, "fixed")].append(
                (f.ttft_ms / r.ttft_ms, f.tpot_ms / r.tpot_ms)
            )
            if client == "imax":
                t, p = replay(r)
                groups[(r.backend, client, "replayed")].append((t / r.ttft_ms, p / r.tpot_ms))
        except PdplanError:
            continue
    for key in sorted(groups):
        print(f"{key[0]:7s} {key[1]:5s} {key[2]:8s} n={len(groups[key]):4d}  {errors(groups[key])}")


def prefill_slope(rows: list[MeasuredRow], src: list[str]) -> None:
    by: dict[tuple, dict[int, list[MeasuredRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.concurrency == 4 and r.osl == 1024 and any(m in src[r.line - 2] for m in IMAX):
            key = (r.backend, r.model_path, r.system, r.weight_dtype, str(r.layout))
            by[key][r.isl].append(r)
    ratios = []
    for key, d in sorted(by.items(), key=lambda kv: str(kv[0])):
        if 1024 not in d or 8192 not in d:
            continue
        r = d[1024][0]
        cm = CostModel(
            get_model(r.model_path),
            get_gpu(r.system),
            r.layout,
            r.backend,
            r.weight_dtype,
            kv_dtype_for(r),
            moe_dtype=r.moe_dtype,
        )
        dt = np.median([x.ttft_ms for x in d[8192]]) - np.median([x.ttft_ms for x in d[1024]])
        dp = (cm.prefill_time(int(8192 * 0.9), 1) - cm.prefill_time(int(1024 * 0.9), 1)) * 1e3
        ratios.append(dt / dp)
        print(f"  {' '.join(str(k) for k in key):70s} dTTFT {dt:6.0f} ms  dprefill {dp:5.0f} ms")
    if ratios:
        print(f"median measured / modelled: {np.median(ratios):.2f} over {len(ratios)} configs")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subsample", type=int, default=3, help="use every k-th row")
    ap.add_argument("--prefill-scale", type=float, default=1.0, help="prompt work x K")
    a = ap.parse_args()
    if a.prefill_scale != 1.0:
        scale_prefill(a.prefill_scale)
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 2
    src = notes()
    rows = [r for r in read_measured(DATA) if not isinstance(r, tuple) and r.mode == "agg"]
    compare(rows[:: max(1, a.subsample)], src)
    print("\nC=4, ISL 1024 -> 8192 (InferenceMAX): measured TTFT rise vs modelled prefill rise")
    prefill_slope(rows, src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
