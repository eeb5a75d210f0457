"""The steady-state estimate against the simulated closed loop on a grid of setups (agreement).

Run: python3 benchmarks/estimate_vs_sim.py
Three models x nine (ISL, OSL, C) closed loops on one aggregated instance (chunked engines:
vLLM / TensorRT-LLM), mean TTFT of 5 x C requests with the start-up round in, the estimate at
rounds = 5 to match; the engines' fixed TTFT overhead is left out of both. Setups whose KV does
not hold all C requests are skipped (the estimate queues them, the simulator preempts). Prints
each setup and the median |log(estimate / simulator)|.
"""

from __future__ import annotations

import math
import statistics

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.estimate import estimate_agg
from pdplan.perf.memory import plan_memory
from pdplan.sim import InstanceSpec, simulate_closed_loop

SETUPS = (("llama-3.1-70b", "h100", 4, "vllm"), ("llama-3.1-8b", "h100", 1, "trtllm"))
SETUPS += (("qwen3-32b", "h200", 2, "vllm"),)
LOOPS = ((8192, 1024, 2), (8192, 1024, 8), (8192, 1024, 16), (4096, 1024, 8), (1024, 1024, 16))
LOOPS += ((1024, 1024, 64), (1024, 256, 32), (2048, 512, 128), (8192, 128, 8))
ROUNDS = 5  # requests per client, both sides


def one(cm: CostModel, cap: int, isl: int, osl: int, c: int) -> tuple[float, float]:
    """(estimated, simulated) mean TTFT in s, engine overhead excluded."""
    est = estimate_agg(cm, isl, osl, c, rounds=float(ROUNDS)).ttft_s - cm.eff.ttft_overhead_s
    spec = InstanceSpec(
        "agg", cm, max_batch=c, kv_capacity_tokens=cap, chunk_budget=cm.step_token_budget
    )
    sim = simulate_closed_loop([spec], isl, osl, c, n_requests=ROUNDS * c, warmup=0)
    return est, float(sim["ttft_s"]["mean"])


def main() -> None:
    errs = []
    for name, gpu, tp, engine in SETUPS:
        m, g, lay = get_model(name), get_gpu(gpu), Layout(tp=tp)
        cm = CostModel(m, g, lay, engine)
        for isl, osl, c in LOOPS:
            cap = plan_memory(m, g, lay, context=isl + osl).kv_capacity_tokens
            if cap < c * (isl + osl):
                continue
            est, sim = one(cm, cap, isl, osl, c)
            errs.append(abs(math.log(est / sim)))
            print(f"{name:<14} {engine:<6} ISL {isl:>5} OSL {osl:>5} C {c:>4}: estimate "
                  f"{est * 1e3:>7.0f} ms, simulator {sim * 1e3:>7.0f} ms, "
                  f"log {math.log(est / sim):+.2f}")  # fmt: skip
    print(f"median |log(estimate / simulator)| over {len(errs)}: {statistics.median(errs):.3f}")


if __name__ == "__main__":
    main()
