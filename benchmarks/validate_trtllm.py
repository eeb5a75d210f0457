"""Out-of-sample check: simulated offline throughput vs TensorRT-LLM's published perf overview.

Run: python3 benchmarks/validate_trtllm.py [--rows OUT.csv] [--engine trtllm]

Data: ../shared/data/calibration/trtllm_perf_overview_v0.17.csv, the throughput table of
NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @ 258c7540 (v0.17): Llama 3.1
8B / 70B / 405B on H100, H200, GH200, L40S (FP8) and A100 (FP16), TP 1-8, nine ISL/OSL pairs;
output tokens/s of the whole TP group under an offline load (every request queued at once).
None of these GPUs' or models' rows was used to fit perf/data/efficiency.yaml (fitted on
measured_serving.csv), so the error here is what the cost model does on unseen setups.

How each row is reproduced (the doc's "Reproducing Benchmarked Results" section):
- dataset: `prepare_dataset.py token-norm-dist --input-stdev 0 --output-stdev 0` with the
  doc's $num_requests per ISL/OSL (NUM_REQUESTS below), all sent at t = 0;
- engine: `trtllm-bench build --quantization FP8` (FP8 weights and, the doc notes, FP8 KV
  cache; A100 rows are FP16 without quantisation); `--kv_cache_free_gpu_mem_fraction 0.95`
  "in the majority of cases";
- max batch size / max num tokens: trtllm-bench's build heuristic (tensorrt_llm/bench/build/
  tuning.py, finetune_setting; the version read is newer than 0.17, the heuristic's shape is
  the one documented for these runs), `engine_limits` below;
- scheduler "guaranteed no evict": a request is admitted only when KV for its whole
  ISL + OSL is reserved, so at most KV tokens // (ISL + OSL) run at once.
The throughput printed is output tokens / makespan of the simulated run.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import PdplanError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.memory import plan_memory
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/calibration"
TABLE = DATA / "trtllm_perf_overview_v0.17.csv"

# perf-overview.md "Preparing a Dataset": requests per (ISL, OSL) "to guarantee that the
# system hit a steady state"
NUM_REQUESTS = {
    (128, 128): 30000,
    (128, 2048): 3000,
    (128, 4096): 1500,
    (2048, 128): 3000,
    (2048, 2048): 1500,
    (5000, 500): 1500,
    (1000, 1000): 3000,
    (500, 2000): 3000,
    (20000, 2000): 1000,
}
KV_FREE_FRACTION = 0.95  # --kv_cache_free_gpu_mem_fraction 0.95 (perf-overview.md)
MODELS = {"LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 70B": "llama-3.1-70b"}
MODELS["LLaMA v3.1 405B"] = "llama-3.1-405b"
GPUS = {"H200 141GB HBM3": "h200-sxm", "H100 80GB HBM3": "h100-sxm", "L40S": "l40s"}
GPUS |= {"GH200 480GB": "gh200", "A100-SXM4-80GB": "a100-sxm"}


def engine_limits(kv_requests: float, isl: int, osl: int, pp: int = 1) -> tuple[int, int]:
    """trtllm-bench's (max_batch_size, max_num_tokens) for a dataset (tuning.py,
    finetune_setting): batch = requests the KV cache holds at ISL + OSL, capped at 4,096, then
    rounded up ("slightly optimistic") to 32 / 128 / 256; tokens = batch x (1 + ISL / OSL),
    capped at 32,768, at least 2,048, rounded up to 256 / 512 / 1,024."""
    raw_bs = min(kv_requests, 4096) / pp
    raw_tok = min(raw_bs * (1 + isl / osl), 32768)
    bs = max(64, _round_up(raw_bs, ((256, 32), (1024, 128)), 256))
    tok = max(2048, _round_up(raw_tok, ((4096, 256), (8192, 512)), 1024))
    return bs, tok


def _round_up(x: float, bands: tuple[tuple[int, int], ...], last: int) -> int:
    """x rounded up to the step of the first band (below, step) it is under, else `last`."""
    step = next((st for below, st in bands if x < below), last)
    return step * math.ceil(x / step)


def simulate_row(row: dict[str, str], engine: str, overrides: dict[str, float]) -> float:
    """Simulated output tokens/s of one table row (whole TP group); `overrides` replace
    efficiency fields (what-if runs: --set seq_s=2e-6)."""
    model, gpu = get_model(MODELS[row["model"]]), get_gpu(GPUS[row["gpu"]])
    tp, isl, osl = int(row["tp"]), int(row["isl"]), int(row["osl"])
    lay = Layout(tp=tp, pp=int(row["num_gpus"]) // tp)
    dt = "fp8" if row["precision"] == "FP8" else "fp16"
    mem = plan_memory(
        model, gpu, lay, dt, dt, mem_fraction=KV_FREE_FRACTION, of_free=True, context=isl + osl
    )
    kv = mem.kv_capacity_tokens
    max_bs, max_tok = engine_limits(kv / (isl + osl), isl, osl, lay.pp)
    running = max(1, min(max_bs, kv // (isl + osl)))  # guaranteed no evict: whole ISL + OSL
    cm = CostModel(model, gpu, lay, engine, dt, dt)
    if overrides:
        cm = CostModel(model, gpu, lay, engine, dt, dt, eff=replace(cm.eff, **overrides))
    spec = InstanceSpec(
        "agg",
        cm,
        max_batch=running,
        kv_capacity_tokens=kv,
        chunk_budget=max_tok if cm.eff.chunked else None,
        prefill_token_budget=max_tok,
        gpus=lay.gpus,
    )
    n = NUM_REQUESTS[(isl, osl)]
    wl = Workload(np.full(n, isl, dtype=np.int64), np.full(n, osl, dtype=np.int64))
    cfg = SimConfig(instances=(spec,), kv_bytes_per_token=model.kv_bytes_per_token(dt))
    res = simulate(cfg, wl, Arrivals("closed", concurrency=n))
    return float(res.summary()["output_tokens_per_s"])


def _report(out: list[dict[str, object]]) -> None:
    """Median |error| and median signed log error by GPU, by model, by ISL/OSL."""
    for key in ("gpu", "model", "tp", "isl_osl"):
        groups: dict[object, list[float]] = {}
        for r in out:
            groups.setdefault(r[key], []).append(float(r["log_err"]))  # type: ignore[arg-type]
        print(f"\nby {key}: rows, median |error| %, median log(pred / measured)")
        for k, v in sorted(groups.items(), key=lambda kv: str(kv[0])):
            ape = statistics.median(abs(math.exp(x) - 1) * 100 for x in v)
            print(f"  {k!s:<18} {len(v):>4} {ape:>7.1f} {statistics.median(v):>+7.2f}")
    allv = [float(r["log_err"]) for r in out]  # type: ignore[arg-type]
    ape = statistics.median(abs(math.exp(x) - 1) * 100 for x in allv)
    within = sum(abs(math.exp(x) - 1) <= 0.2 for x in allv)
    print(f"\nall: {len(allv)} rows, median |error| {ape:.1f} %, {within} within 20 %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=Path, help="write per-row predictions here (CSV)")
    ap.add_argument("--engine", default="trtllm", help="efficiencies to use (default trtllm)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override an efficiency field (what-if), e.g. --set seq_s=2e-6",
    )
    a = ap.parse_args()
    overrides = {k: float(v) for k, v in (kv.split("=", 1) for kv in a.set)}
    if not TABLE.exists():
        sys.exit(f"{TABLE} not found: this check reads ../shared/data beside the repository")
    out: list[dict[str, object]] = []
    for row in csv.DictReader(TABLE.open()):
        try:
            pred = simulate_row(row, a.engine, overrides)
        except PdplanError as e:  # a model that does not fit is reported, not hidden
            print(f"skip {row['model']} {row['gpu']} tp{row['tp']}: {e}")
            continue
        meas = float(row["value"])
        out.append(
            {"gpu": GPUS[row["gpu"]], "model": MODELS[row["model"]], "tp": row["tp"],
             "isl_osl": f"{row['isl']}/{row['osl']}", "measured": meas,
             "predicted": round(pred, 1), "log_err": round(math.log(pred / meas), 4)}
        )  # fmt: skip
    _report(out)
    if a.rows:
        with a.rows.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0]))
            w.writeheader()
            w.writerows(out)


if __name__ == "__main__":
    main()
