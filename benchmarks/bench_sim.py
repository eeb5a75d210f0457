"""Simulator speed: simulated requests per second (one core) and peak memory for 1M requests.

Run: python3 benchmarks/bench_sim.py [--n 50000] [--mem-n 1000000]
Cluster: 4P8D Llama-3.1-70B on H200 (P = TP4, D = TP8), Azure-conv-like lengths (lognormal,
median 1020 / 129 tokens, Azure LLM inference trace 2023, conv), Poisson arrivals at ~70 % of
prefill capacity.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

KV_BYTES = 327_680  # Llama-3.1-70B bf16 KV per token: 2 * 80 layers * 8 kv heads * 128 * 2 B


def step_models() -> tuple[LinearStepModel, LinearStepModel]:
    """Stand-ins of realistic magnitude until perf.costmodel.CostModel lands; swap here:
    CostModel(get_model("llama-3.1-70b"), get_gpu("h200"), Layout.parse("tp4"))."""
    prefill = LinearStepModel(base_s=0.008, per_token_s=0.12e-3)  # TP4: 8 ms + 0.12 ms/token
    decode = LinearStepModel(base_s=0.012, per_seq_s=0.03e-3, per_ctx_s=2e-7)  # TP8
    return prefill, decode


def cluster() -> SimConfig:
    pm, dm = step_models()
    ps = [
        InstanceSpec(
            "prefill",
            pm,
            gpus=4,
            node=i // 2,
            kv_capacity_tokens=600_000,
            max_batch=64,
            prefill_token_budget=8192,
        )
        for i in range(4)
    ]
    ds = [
        InstanceSpec("decode", dm, gpus=8, node=2 + i, kv_capacity_tokens=1_400_000, max_batch=256)
        for i in range(8)
    ]
    return SimConfig(instances=tuple(ps + ds), kv_bytes_per_token=KV_BYTES)


def azure_conv_like(n: int, seed: int = 0) -> Workload:
    rng = np.random.default_rng(seed)
    inp = np.clip(rng.lognormal(np.log(1020), 0.75, n), 16, 14000).astype(np.int32)
    out = np.clip(rng.lognormal(np.log(129), 0.9, n), 2, 1000).astype(np.int32)
    return Workload(inp, out)


def run(n: int, exact: bool = False) -> float:
    wl = azure_conv_like(n)
    cfg = cluster()
    if exact:
        from dataclasses import replace

        cfg = replace(cfg, exact=True)
    t = time.perf_counter()
    res = simulate(cfg, wl, Arrivals("poisson", rate=20.0))
    dt = time.perf_counter() - t
    s = res.summary()
    print(
        f"n={n} exact={exact}: {n / dt:,.0f} simulated requests/s ({dt:.2f} s wall, "
        f"{s['events']:,} events); TTFT p50 {s['ttft_s']['p50']:.3f} s p99 "
        f"{s['ttft_s']['p99']:.3f} s; TPOT p50 {s['tpot_s']['p50'] * 1e3:.1f} ms p99 "
        f"{s['tpot_s']['p99'] * 1e3:.1f} ms; util P {s['instances'][0]['utilisation']:.2f}"
    )
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--mem-n", type=int, default=0, help="also run this many for peak memory")
    ap.add_argument("--exact", action="store_true")
    a = ap.parse_args()
    run(a.n, a.exact)
    if a.mem_n:
        run(a.mem_n)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB (Linux)
        print(f"peak RSS after {a.mem_n:,} requests: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
