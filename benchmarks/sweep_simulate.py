"""Robustness sweep: simulate every catalog model x GPU x engine x deployment; count the outcomes.

Run: python3 benchmarks/sweep_simulate.py [--gpus h100-sxm,b200-sxm,mi300x,l40s,gb200] [--n 120]
Each setup runs a small lognormal workload (mean 2000 / 200 tokens) open loop at 4 req/s (the
workload's own times) and with 16 closed-loop clients. A setup pdplan refuses with its own named
error (does not fit, TP does not divide the heads, TensorRT-LLM on AMD, EP on a dense model) is
counted by error class; any other exception is a bug and is printed with its setup, as is a run
that loses requests or reports a non-finite or non-positive TTFT / TPOT percentile (a run that
drops every request for a reason it names, a KV pool too small for any of them, is counted
apart). Prints the
counts (runs for "ok" and "insane", setups for the errors) and the setups per second.
"""

from __future__ import annotations

import argparse
import math
import time
import traceback
import warnings
from collections import Counter

from pdplan.catalog.models import list_models
from pdplan.errors import PdplanError
from pdplan.plan.sim_deploy import simulate_deployment
from pdplan.sim import Arrivals
from pdplan.workload import synthesize

DEPLOYMENTS = (
    "tp8x1", "tp4x2", "tp1x1", "tp2-pp2x1", "tp8-ep8x1",
    "1P:tp8+1D:tp8", "2P:tp4+1D:tp8", "1P:dp8-ep8+1D:dp8-ep8",
)  # fmt: skip
ENGINES = ("vllm", "sglang", "trtllm")


def insane(s: dict, n: int) -> bool:
    """Lost requests, or a TTFT / TPOT percentile that is not a positive finite number."""
    vals = [s[m][q] for m in ("ttft_s", "tpot_s") for q in ("p50", "p99")]
    return s["finished"] + s["dropped"] != n or any(not math.isfinite(v) or v <= 0 for v in vals)


def one(model: str, gpu: str, engine: str, dep: str, wl: object, n: int, out: Counter) -> None:
    """Both arrival modes of one setup; the outcome goes to `out`."""
    try:
        for arr in (Arrivals("trace"), Arrivals("closed", concurrency=16)):
            s = simulate_deployment(model, gpu, dep, wl, arr, engine=engine).summary()  # type: ignore[arg-type]
            if s["finished"] == 0 and s["dropped"] == n and s["drop_reasons"]:
                out["runs all dropped, reason named"] += 1  # e.g. a pool too small for any
            elif insane(s, n):
                out["runs insane"] += 1
                print("INSANE", model, gpu, engine, dep, arr.mode, s["finished"], flush=True)
            else:
                out["runs ok"] += 1
    except PdplanError as e:
        out[type(e).__name__] += 1
    except Exception as e:  # a bug: pdplan should have named it
        out["bug"] += 1
        print("BUG", model, gpu, engine, dep, repr(e)[:300], flush=True)
        traceback.print_exc(limit=4)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", default="h100-sxm,b200-sxm,mi300x,l40s,gb200")
    ap.add_argument("--n", type=int, default=120, help="requests per run")
    a = ap.parse_args()
    warnings.simplefilter("ignore")  # layout notes (TP across nodes, ...) are not failures
    wl = synthesize(
        n=a.n, rate=4.0, input="lognormal:2000:0.8:16000", output="lognormal:200:0.8:1000", seed=1
    )
    out: Counter = Counter()
    t0 = time.perf_counter()
    setups = 0
    for model in list_models():
        for gpu in a.gpus.split(","):
            for engine in ENGINES:
                for dep in DEPLOYMENTS:
                    one(model, gpu, engine, dep, wl, a.n, out)
                    setups += 1
    dt = time.perf_counter() - t0
    print(f"{setups:,} setups in {dt:.0f} s ({setups / dt:,.1f} setups/s): " + ", ".join(
        f"{k} {v:,}" for k, v in out.most_common()
    ))  # fmt: skip


if __name__ == "__main__":
    main()
