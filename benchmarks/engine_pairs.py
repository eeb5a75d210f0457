"""One engine against another on matched measured rows: are relative engine speeds right?

Usage:
    pdplan accuracy --measured ../shared/data/calibration/measured_serving.csv --mode agg \\
        --simulate --rows /tmp/rows.csv
    python benchmarks/engine_pairs.py /tmp/rows.csv

Pairs every row of one engine with each row of another engine that has the same model, GPU,
layout, ISL, OSL and concurrency (no speculative decoding on either), and compares the measured
ratio of TTFT and TPOT with the predicted one, as log(A / B), A the engine first in name order.
Per (engine, version) pair and prompt length it prints the medians, then the median
|measured - predicted| over all pairs. Per-setup levels cancel in each pair, so what is left
is what differs between the two engines' runs: their kernels and schedulers, the weight dtype
each ran (the `model` column names the checkpoint, e.g. Qwen/Qwen3-32B ran BF16 on one engine
and FP8 on another in the AIConfigurator gap-analysis file), and their harness.
"""

from __future__ import annotations

from collections import defaultdict

# ep_pairs sits in this folder: run as `python benchmarks/engine_pairs.py`
from ep_pairs import _log_ratio, _med, read_rows

Pair = tuple[float, float, float, float]  # TTFT meas / pred, TPOT meas / pred (log A / B)
_KEY = ("model", "system", "layout", "isl", "osl", "concurrency")


def pairs(rows: list[dict[str, str]]) -> dict[tuple[str, ...], list[Pair]]:
    """(engine A, version A, engine B, version B, ISL) -> one tuple per matched pair."""
    idx: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        if r["spec_decode"] in ("", "none"):
            idx[tuple(r[c] for c in _KEY)].append(r)
    out: dict[tuple[str, ...], list[Pair]] = defaultdict(list)
    for key, group in idx.items():
        for a in group:
            for b in group:
                if a["backend"] >= b["backend"]:  # each cross-engine pair once, A < B
                    continue
                out[(a["backend"], a["version"], b["backend"], b["version"], key[3])].append(
                    tuple(  # type: ignore[arg-type]
                        _log_ratio(a, b, f"{kind}_{m}_ms")
                        for m in ("ttft", "tpot")
                        for kind in ("measured", "predicted")
                    )
                )
    return out


def main() -> None:
    groups = pairs(read_rows(__doc__))
    print("log(A / B), median per group: measured vs predicted")
    for (ea, va, eb, vb, isl), ps in sorted(groups.items()):
        print(
            f"  {ea} {va or '?':14s} / {eb} {vb or '?':14s} ISL {isl:>5s}: {len(ps):3d} pairs  "
            f"TTFT {_med([p[0] for p in ps]):+.2f} vs {_med([p[1] for p in ps]):+.2f}  "
            f"TPOT {_med([p[2] for p in ps]):+.2f} vs {_med([p[3] for p in ps]):+.2f}"
        )
    every = [p for ps in groups.values() for p in ps]
    print(
        f"all: {len(every)} pairs, median |measured - predicted| log(A / B): "
        f"TTFT {_med([abs(p[0] - p[1]) for p in every]):.3f}, "
        f"TPOT {_med([abs(p[2] - p[3]) for p in every]):.3f}"
    )


if __name__ == "__main__":
    main()
