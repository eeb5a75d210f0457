"""Shared builders for the simulator tests (hand-made step models, small clusters)."""

from __future__ import annotations

import numpy as np

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec
from pdplan.workload.core import Workload

PREFILL = LinearStepModel(base_s=0.005, per_token_s=1e-4)
DECODE = LinearStepModel(base_s=0.01, per_seq_s=5e-5, per_ctx_s=2e-7)
AGG = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_seq_s=5e-5, per_ctx_s=2e-7)


def lengths_workload(n: int, seed: int = 1, isl: float = 600, osl: float = 80) -> Workload:
    rng = np.random.default_rng(seed)
    inp = np.clip(rng.lognormal(np.log(isl), 0.7, n), 8, 6000).astype(np.int32)
    out = np.clip(rng.lognormal(np.log(osl), 0.8, n), 2, 600).astype(np.int32)
    return Workload(inp, out)


def shared_block_pair() -> Workload:
    """Two 1,024-token prompts (2 output tokens) at 0 s and 10 s whose first 512-token block
    is the same (hash 7): the second hits a prefix cache in its first block."""
    return Workload(
        np.array([1024, 1024], np.int32),
        np.array([2, 2], np.int32),
        np.array([0.0, 10.0]),
        hash_offsets=np.array([0, 2, 4]),
        hash_ids=np.array([7, 8, 7, 9]),
        block_tokens=512,
    )


def xpyd(p: int, d: int, d_cap: int = 400_000, **kw: object) -> tuple[InstanceSpec, ...]:
    ps = [InstanceSpec("prefill", PREFILL, node=i, gpus=2) for i in range(p)]
    ds = [
        InstanceSpec("decode", DECODE, node=100 + i, gpus=4, kv_capacity_tokens=d_cap, **kw)
        for i in range(d)
    ]  # type: ignore[arg-type]
    return tuple(ps + ds)


def aggs(n: int, cap: int = 400_000, **kw: object) -> tuple[InstanceSpec, ...]:
    return tuple(
        InstanceSpec("agg", AGG, kv_capacity_tokens=cap, **kw)  # type: ignore[arg-type]
        for _ in range(n)
    )
