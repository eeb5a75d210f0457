"""The prefix cache only serves blocks whose prefill is done (vLLM APC, SGLang radix cache):
a prompt's blocks enter the cache when its prefill completes, not when it is routed."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # a 2048-token prefill takes 2.058 s


def _same_prefix(times: list[float], blocks: list[list[int]]) -> Workload:
    n = len(times)
    return Workload(
        np.full(n, 2048, np.int32),
        np.full(n, 2, np.int32),
        np.array(times),
        hash_offsets=np.cumsum([0] + [len(b) for b in blocks]),
        hash_ids=np.concatenate([np.array(b) for b in blocks]),
        block_tokens=512,
    )


CLUSTERS = {
    "agg": (InstanceSpec("agg", STEP, prefix_cache_blocks=100),),
    "agg_chunked": (InstanceSpec("agg", STEP, prefix_cache_blocks=100, chunk_budget=512),),
    "disagg": (
        InstanceSpec("prefill", STEP, prefix_cache_blocks=100),
        InstanceSpec("decode", STEP, node=1),
    ),
}


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_no_hit_on_blocks_still_being_prefilled(name: str) -> None:
    """Request 0 at t=0; four with the same 4 blocks at 10 ms, while 0 is still prefilling
    (computed blocks only: no hit); four more at 60 s, long after: full hits (2047 tokens,
    the last token is always computed)."""
    times = [0.0] + [0.01] * 4 + [60.0] * 4
    wl = _same_prefix(times, [[1, 2, 3, 4]] * 9)
    res = simulate(SimConfig(instances=CLUSTERS[name], routing="prefix"), wl)
    assert res.summary()["finished"] == 9
    assert res.columns["first"][0] > 0.01  # still prefilling when the four arrived
    assert list(res.columns["hit"]) == [0] * 5 + [2047] * 4


def test_insert_at_completion_keeps_lru_eviction() -> None:
    """An 8-block cache, 4-block prompts 10 s apart (each done long before the next): A, B,
    A again (hit, refreshes A), C (evicts B, the least recently used), B (miss; evicts A),
    C (hit)."""
    a, b, c = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]
    wl = _same_prefix([0.0, 10.0, 20.0, 30.0, 40.0, 50.0], [a, b, a, c, b, c])
    inst = (InstanceSpec("agg", STEP, prefix_cache_blocks=8),)
    res = simulate(SimConfig(instances=inst, routing="prefix"), wl)
    assert list(res.columns["hit"]) == [0, 0, 2047, 0, 0, 2047]


def test_a_role_switch_empties_the_prefix_cache() -> None:
    """Instance 0 prefills the shared prefix, serves as decode from 20 s (its KV pool holds
    decodes then) and is prefill again from 30 s: the first prompt after that misses (its old
    LRU claimed a hit), the next hits. Instance 1, decode with a cache (as `pdplan simulate
    --prefix-cache` gives every instance one), serves as prefill from 20 to 30 s: a miss, then
    a hit on what it prefilled itself."""
    from pdplan.sim import RoleSwitch

    insts = (
        InstanceSpec("prefill", STEP, prefix_cache_blocks=100),
        InstanceSpec("decode", STEP, node=1, prefix_cache_blocks=100),
        InstanceSpec("decode", STEP, node=2),
    )
    sw = (
        RoleSwitch(20.0, 0, "decode"), RoleSwitch(20.0, 1, "prefill"),
        RoleSwitch(30.0, 0, "prefill"), RoleSwitch(30.0, 1, "decode"),
    )  # fmt: skip
    wl = _same_prefix([0.0, 5.0, 22.0, 25.0, 40.0, 45.0], [[1, 2, 3, 4]] * 6)
    res = simulate(SimConfig(instances=insts, switches=sw, switch_cost_s=1.0), wl)
    c = res.columns
    assert list(c["p_inst"]) == [0, 0, 1, 1, 0, 0]
    assert list(c["hit"]) == [0, 2047, 0, 2047, 0, 2047]  # all blocks but the last token
