"""EP against TP on matched measured rows: does the model get what expert parallelism costs?

Usage:
    pdplan accuracy --measured ../shared/data/calibration/measured_serving.csv --mode agg \\
        --simulate --rows /tmp/rows.csv
    python benchmarks/ep_pairs.py /tmp/rows.csv

Pairs every `tpN-epN` row with each `tpN` row of the same engine, version, model, GPU, ISL,
OSL, concurrency and speculative decoding (only the MoE split differs), and compares the
measured EP / TP ratio of TTFT and TPOT with the predicted one, as log(EP / TP). Per group it
prints the medians; at the end the median |measured - predicted| over all pairs, for TTFT and
TPOT, and the same for the pairs at C <= 16, where the busiest EP rank's weight reads matter
most (perf/moe_parallel.py). A cost model that prices EP's communication or load balance
wrongly shows it here, whatever the per-setup levels (which cancel in each pair) are.
"""

from __future__ import annotations

import csv
import math
import sys
from collections import defaultdict
from statistics import median

Pair = tuple[int, float, float, float, float]  # C, TTFT meas / pred, TPOT meas / pred (log)


def _log_ratio(a: dict[str, str], b: dict[str, str], col: str) -> float:
    """log(a[col] / b[col]); NaN when either is empty (one-token rows have no TPOT)."""
    if not a[col] or not b[col]:
        return math.nan
    return math.log(float(a[col]) / float(b[col]))


def pairs(rows: list[dict[str, str]]) -> dict[tuple[str, ...], list[Pair]]:
    """(engine, model, GPU, TP) -> one tuple per matched EP / TP pair of rows."""
    key_cols = ("backend", "version", "model", "system", "isl", "osl", "concurrency")
    idx: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for r in rows:  # twins (one setup exported twice) all pair
        idx[(*(r[c] for c in key_cols), r["spec_decode"], r["layout"])].append(r)
    out: dict[tuple[str, ...], list[Pair]] = defaultdict(list)
    for key, eps in idx.items():
        lay = key[-1]
        tp = lay.split("-")[0]
        tps = idx.get((*key[:-1], tp), [])
        if lay != f"{tp}-ep{tp[2:]}":
            continue
        for ep in eps:
            for t in tps:
                out[(key[0], key[2], key[3], tp)].append(
                    (
                        int(key[6]),
                        _log_ratio(ep, t, "measured_ttft_ms"),
                        _log_ratio(ep, t, "predicted_ttft_ms"),
                        _log_ratio(ep, t, "measured_tpot_ms"),
                        _log_ratio(ep, t, "predicted_tpot_ms"),
                    )
                )
    return out


def _med(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return median(xs) if xs else math.nan


def read_rows(doc: str | None) -> list[dict[str, str]]:
    """The rows of the `accuracy --rows` CSV named on the command line (else print `doc`)."""
    if len(sys.argv) != 2:
        sys.exit(doc)
    with open(sys.argv[1], newline="") as fh:
        return list(csv.DictReader(fh))


def main() -> None:
    groups = pairs(read_rows(__doc__))
    print("log(EP / TP), median per group: measured vs predicted")
    for (eng, model, gpu, tp), ps in sorted(groups.items()):
        print(
            f"  {eng:7s} {model[:28]:28s} {gpu:9s} {tp}: {len(ps):3d} pairs  "
            f"TTFT {_med([p[1] for p in ps]):+.2f} vs {_med([p[2] for p in ps]):+.2f}  "
            f"TPOT {_med([p[3] for p in ps]):+.2f} vs {_med([p[4] for p in ps]):+.2f}"
        )
    every = [p for ps in groups.values() for p in ps]
    low = [p for p in every if p[0] <= 16]
    for name, sel in (("all", every), ("C <= 16", low)):
        print(
            f"{name}: {len(sel)} pairs, median |measured - predicted| log(EP / TP): "
            f"TTFT {_med([abs(p[1] - p[2]) for p in sel]):.3f}, "
            f"TPOT {_med([abs(p[3] - p[4]) for p in sel]):.3f}"
        )


if __name__ == "__main__":
    main()
