"""Where measured TTFT sits at low load: against the cost model's lone-prompt prefill step.

Usage:
    python benchmarks/ttft_floor.py [--measured CSV] [--max-c 4] [--rows ROWS.csv]

At C <= 4 clients no queue forms in a closed loop, so a row's TTFT is, physically, the prompt's
prefill plus what lies outside the GPU step (the wait for a running step, the API server, the
first token's way back) and, with several clients sent together, the other prompts of the same
burst. For every aggregated row at C <= --max-c without speculative decoding this takes the
cost model's step time for that prompt alone (`CostModel.step_time`, ms) and prints, per engine:
the least-absolute-deviations fit TTFT ~ a + b x prefill + c x TPOT (robust to the few runs
that measured seconds) (a ms; b, c dimensionless, TPOT the
row's measured one) and, per ISL, the medians of measured TTFT, the lone prefill and their
difference in ms and in measured decode steps. b = 1 with a small a would say the model prices
the prompt right and the engine adds a constant; a large b says prompts wait for other prompts
(or prefill is dearer than modelled); a large c says the first token waits for decode steps.
With --rows (the output of `pdplan accuracy --simulate --rows ROWS.csv`) the same fit of
the simulated TTFT is printed under it, so what the simulator lacks shows term by term.
Nothing here is fitted into pdplan: it locates the TTFT error the simulator leaves
(benchmarks/README.md, nineteenth pass).
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path
from statistics import median

import numpy as np

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import PdplanError
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.perf.step import BatchShape
from pdplan.plan.row_recipe import row_recipe_eff
from pdplan.plan.row_spec import row_cost_model

MEASURED = (
    Path(__file__).resolve().parents[1].parent / "shared/data/calibration/measured_serving.csv"
)

Point = tuple[float, float, float, int, str]  # lone prefill ms, TTFT ms, TPOT ms, ISL, row id


def lone_prefill_ms(row: MeasuredRow) -> float:
    """Step time of the row's prompt prefilled alone on its layout, ms (causal pairs L(L+1)/2)."""
    model, gpu = get_model(row.model_path), get_gpu(row.system)
    eff = row_recipe_eff(row, get_efficiency(row.backend, gpu.name, gpu.hbm_gib))
    cm = row_cost_model(row, model, gpu, row.layout, eff)
    n = row.isl
    return cm.step_time(BatchShape(n, n * (n + 1) / 2, 1, 0, 0)) * 1e3


def points(path: Path, max_c: int) -> dict[str, list[Point]]:
    """engine -> one point per readable low-concurrency aggregated row."""
    out: dict[str, list[Point]] = defaultdict(list)
    for row in read_measured(path):
        if isinstance(row, tuple) or row.mode != "agg" or row.spec_decode:
            continue
        if not row.concurrency or row.concurrency > max_c or row.layout is None:
            continue
        try:
            t1 = lone_prefill_ms(row)
        except PdplanError:  # a model or GPU outside the catalog, a layout that does not fit
            continue
        out[row.backend].append((t1, row.ttft_ms, row.tpot_ms, row.isl, row.row_id))
    return out


def lad_fit(x: np.ndarray, y: np.ndarray, iters: int = 50) -> np.ndarray:
    """Least absolute deviations by iteratively reweighted least squares (weights 1 / |r|)."""
    w = np.ones_like(y)
    for _ in range(iters):
        sw = np.sqrt(w)[:, None]
        beta = np.linalg.lstsq(x * sw, y * sw[:, 0], rcond=None)[0]
        w = 1.0 / np.maximum(np.abs(y - x @ beta), 1e-3)  # floor: 1 us, no division by zero
    return beta


def fit_line(what: str, pts: list[Point], ttft: list[float]) -> None:
    x, d = (np.array([p[i] for p in pts]) for i in (0, 2))
    a, b, c = lad_fit(np.c_[np.ones_like(x), x, d], np.array(ttft))
    print(f"  {what:9s} TTFT ~ {a:+4.0f} ms + {b:.2f} x prefill + {c:.1f} x TPOT")


def report(engine: str, pts: list[Point], simulated: dict[str, float]) -> None:
    print(f"{engine} ({len(pts)} rows)")
    fit_line("measured", pts, [p[1] for p in pts])
    sim = [p for p in pts if p[4] in simulated]
    if sim:
        fit_line("simulated", sim, [simulated[p[4]] for p in sim])
    for isl in sorted({p[3] for p in pts}):
        s = [p for p in pts if p[3] == isl]
        if len(s) < 5:
            continue
        gap = median(p[1] - p[0] for p in s)
        steps = median((p[1] - p[0]) / p[2] for p in s)
        print(
            f"  ISL {isl:6d} {len(s):4d} rows: measured {median(p[1] for p in s):6.0f} ms, "
            f"lone prefill {median(p[0] for p in s):5.0f} ms, gap {gap:5.0f} ms = {steps:4.1f} TPOT"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--measured", type=Path, default=MEASURED)
    ap.add_argument("--max-c", type=int, default=4, help="highest concurrency taken (clients)")
    ap.add_argument("--rows", type=Path, help="`pdplan accuracy --simulate --rows` output")
    a = ap.parse_args()
    simulated: dict[str, float] = {}
    if a.rows:
        with a.rows.open(newline="") as fh:
            simulated = {r["id"]: float(r["predicted_ttft_ms"]) for r in csv.DictReader(fh)}
    for engine, pts in sorted(points(a.measured, a.max_c).items()):
        report(engine, pts, simulated)


if __name__ == "__main__":
    main()
