"""Hand-checked aggregated-instance physics: prefix-cache eviction order.

A full prefix cache must evict a prompt's tail blocks before its head (vLLM frees a request's
blocks in reverse order, SGLang's radix cache evicts leaves): a hit needs the leading blocks,
so evicting the head first left the rest cached but unreachable.
"""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.sim.cache import PrefixCache
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=1e-3)  # prefill of n tokens: 0.01 + n ms


def _hashed(inp: list[int], hashes: list[list[int]], times: list[float]) -> Workload:
    off = np.cumsum([0] + [len(h) for h in hashes]).astype(np.int64)
    ids = np.array([h for hs in hashes for h in hs], np.int64)
    n = len(inp)
    return Workload(
        np.array(inp, np.int32), np.full(n, 3, np.int32), np.array(times, float), off, ids, 16
    )


def test_full_cache_evicts_a_prefix_tail_first() -> None:
    cache = PrefixCache(4)
    cache.insert([1, 2, 3, 4])
    cache.insert([9])  # one block over capacity: block 4 (the tail) goes, not block 1
    assert cache.match([1, 2, 3, 4, 5]) == 3  # was 0: block 1 evicted, 2-4 unreachable


def test_a_hit_refreshes_the_head_last() -> None:
    cache = PrefixCache(4)
    cache.insert([1, 2, 3])
    cache.insert([7])
    assert cache.lookup([1, 2, 3]) == 3
    cache.insert([8])  # evicts the least recent: block 7, then the prefix's tail
    cache.insert([9])
    assert cache.match([1, 2, 3]) == 2


def test_simulated_hit_after_eviction_keeps_the_head() -> None:
    # 16-token blocks, 4-block cache: A (blocks 1-4), then D (block 9) pushes one block out;
    # B (blocks 1-5, 80 tokens) then hits blocks 1-3 (48 tokens) and prefills 32:
    # 0.01 + 0.032 s after its arrival at 2 s
    wl = _hashed([64, 16, 80], [[1, 2, 3, 4], [9], [1, 2, 3, 4, 5]], [0.0, 1.0, 2.0])
    inst = InstanceSpec("agg", STEP, prefix_cache_blocks=4)
    res = simulate(SimConfig(instances=(inst,), kv_bytes_per_token=1e3), wl, Arrivals("trace"))
    assert list(res.columns["hit"]) == [0, 0, 48]  # was [0, 0, 0]
    assert res.columns["first"][2] == pytest.approx(2.042)
