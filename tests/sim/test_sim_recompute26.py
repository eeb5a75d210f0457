"""Recompute preemption as vLLM V1 / SGLang run it: the victim re-enters the waiting queue with
no computed tokens (vLLM Scheduler._preempt_request sets num_computed_tokens = 0; SGLang's
retract resets the request), so its next prefill covers prompt + every output token so far,
and that prefill's last chunk samples its next token, as any prompt's does. With a prefix
cache its prompt's leading blocks are looked up like a new request's (vLLM
get_computed_blocks for num_computed_tokens == 0; SGLang's radix match)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import aggs, lengths_workload, xpyd

# prefill of T tokens: 0.01 + 0.001 T s; decode step of b sequences: 0.01 + 0.001 b s
STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)


def _pair(exact: bool, cache: int = 0, chunk: int | None = None) -> tuple[SimConfig, Workload]:
    """A (10 in, 6 out) and B (10 in, 5 out) at t=0 on one agg instance with KV for 24 tokens;
    with `cache`, 4-token blocks: A's prompt hashes 1 2 3, B's 4 5 6."""
    inst = InstanceSpec("agg", STEP, kv_capacity_tokens=24, prefix_cache_blocks=cache,
                        chunk_budget=chunk)  # fmt: skip
    cfg = SimConfig(instances=(inst,), exact=exact)
    inp, out = np.array([10, 10], np.int32), np.array([6, 5], np.int32)
    if not cache:
        return cfg, Workload(inp, out, np.zeros(2))
    offs, ids = np.array([0, 3, 6], np.int64), np.array([1, 2, 3, 4, 5, 6], np.int64)
    return cfg, Workload(inp, out, np.zeros(2), hash_offsets=offs, hash_ids=ids, block_tokens=4)


@pytest.mark.parametrize("exact", [False, True])
def test_recompute_samples_its_next_token_by_hand(exact: bool) -> None:
    """Prefill A [0, 0.02] (first token), B [0.02, 0.04] (first token; A stalls). Two decode
    steps of 0.012 s (b=2) end at 0.052, 0.064: KV 20 + 4 = 24 is full, so B (newest: 10 in +
    2 written, 3 tokens out) is evicted. A's last 3 steps (0.011 s) end at 0.097 (B needs 13 +
    1 > 24 - 12 until then). B re-prefills all 13 tokens it has (10 + 3) in 0.023 s: token 4
    at 0.120, token 5 after one decode step, 0.131. (The old model re-prefilled 12 in 0.022 s
    and took a decode step for token 4: 0.130, 0.141.)"""
    cfg, wl = _pair(exact)
    res = simulate(cfg, wl)
    assert res.preemptions == 1
    c = res.columns
    assert list(c["first"]) == pytest.approx([0.02, 0.04])
    assert list(c["finish"]) == pytest.approx([0.097, 0.131])
    # gaps: A 0.032 (its first includes B's prefill), 0.012, 0.011 x3; B 0.012 x2, 0.056
    # (eviction at 0.064 -> token 4 at 0.120), 0.011
    assert res.itl.gaps == 5 + 4
    assert res.itl.mean() == pytest.approx((0.032 + 0.012 + 0.033 + 0.024 + 0.056 + 0.011) / 9)
    assert res.metric("tpot")[1] == pytest.approx((0.131 - 0.04) / 4)


@pytest.mark.parametrize("exact", [False, True])
def test_recompute_hits_its_cached_prompt_blocks(exact: bool) -> None:
    """As above with a prefix cache: B's 3 prompt blocks (hashes 4 5 6, 12 tokens > its 10)
    are cached at its prefill's end and still there, so its recompute computes only its 3
    output tokens past the 10 prompt tokens: 0.01 + 0.003 = 0.013 s from 0.097, token 4 at
    0.110, token 5 at 0.121. Its first prefill had no hit (hit stays 0: that column is the
    prompt's own prefill)."""
    cfg, wl = _pair(exact, cache=100)
    res = simulate(cfg, wl)
    assert res.preemptions == 1
    assert list(res.columns["finish"]) == pytest.approx([0.097, 0.121])
    assert list(res.columns["hit"]) == [0, 0]
    assert res.instances[0]["prefix_hit_blocks"] == 3


def test_recompute_hits_only_the_blocks_still_cached() -> None:
    """A cache of 2 blocks: prompts go in tail first, so after B's prefill it holds B's head,
    4 5 (8 tokens); the recompute computes 13 - 8 = 5 tokens in 0.015 s from 0.097: token 4 at
    0.112, token 5 at 0.123."""
    cfg, wl = _pair(False, cache=2)
    res = simulate(cfg, wl)
    assert res.preemptions == 1
    assert list(res.columns["finish"]) == pytest.approx([0.097, 0.123])
    assert res.instances[0]["prefix_hit_blocks"] == 2


@pytest.mark.parametrize("exact", [False, True])
def test_recompute_with_chunked_prefill_by_hand(exact: bool) -> None:
    """vLLM-style chunked prefill (budget 64): the same steps (mixed ones hold no decodes
    while the prompts run alone), so the same times as prefill-first but for A's stall: B's
    prompt chunk runs with A's decode (0.01 + 0.001 (10 + 1) = 0.021 s, A's token 2 and B's
    first at 0.041)."""
    cfg, wl = _pair(exact, chunk=64)
    res = simulate(cfg, wl)
    assert res.preemptions == 1
    c = res.columns
    assert list(c["first"]) == pytest.approx([0.02, 0.041])
    # b=2 steps of 0.012 from 0.041: KV 10+1 + 10 = 21 after the mixed step; one step -> 23,
    # the next needs 25 > 24: B (10 + 1 written, 2 out) is evicted at 0.053; A alone: tokens 4,
    # 5, 6 at 0.064, 0.075, 0.086; B's 12 tokens (10 + 2) in one chunk, 0.022 s: token 3 at
    # 0.108, then 4 and 5 at 0.119, 0.130
    assert list(c["finish"]) == pytest.approx([0.086, 0.130])


def _with_prefixes(wl: Workload, block: int = 64) -> Workload:
    """wl with block hashes: groups of 10 requests share their first 4 blocks, the rest are
    each request's own (ids past 10**6)."""
    nb = -(-wl.input_len.astype(np.int64) // block)
    offs = np.concatenate([[0], np.cumsum(nb)])
    ids = np.arange(int(offs[-1]), dtype=np.int64) + 10**6
    for i, (lo, n) in enumerate(zip(offs[:-1], nb, strict=True)):
        k = min(4, int(n))
        ids[lo : lo + k] = (i // 10) * 4 + np.arange(k)
    return Workload(wl.input_len, wl.output_len, hash_offsets=offs, hash_ids=ids,
                    block_tokens=block)  # fmt: skip


_CASES = {
    "agg": (SimConfig(instances=aggs(1, cap=30_000)), False),
    "agg_chunked": (SimConfig(instances=aggs(1, cap=30_000, chunk_budget=2048)), False),
    "agg_cached": (SimConfig(instances=aggs(1, cap=30_000, prefix_cache_blocks=400)), True),
    "pd": (SimConfig(instances=xpyd(2, 2, d_cap=6_000)), False),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_recompute_keeps_tokens_exact_and_modes_agree(name: str) -> None:
    """Under recompute preemption every request emits exactly its output, the ITL log holds
    sum(out - 1) gaps adding up to the first-to-last-token times, and the event-skipping mode
    agrees with exact steps within 1 % on p50 / p99 TTFT and TPOT."""
    cfg, cached = _CASES[name]
    wl = lengths_workload(600, seed=11)
    wl = _with_prefixes(wl) if cached else wl
    res = {}
    for exact in (False, True):
        r = simulate(replace(cfg, exact=exact), wl, Arrivals("poisson", 10))
        assert r.preemptions > 5
        c = r.columns
        done = c["state"] == 2
        assert np.sum(done) == 600 - r.summary()["dropped"] >= 599  # pd: one fits no pool
        out = c["out"][done].astype(np.int64)
        assert r.itl.gaps == int(np.sum(out - 1))
        span = float(np.sum((c["finish"] - c["first"])[done]))  # s, first -> last token
        assert r.itl.mean() * r.itl.gaps == pytest.approx(span, rel=1e-4)
        res[exact] = r.summary()
    assert res[False]["preemptions"] == res[True]["preemptions"]
    for m in ("ttft_s", "tpot_s"):
        for q in ("p50", "p99"):
            assert res[False][m][q] == pytest.approx(res[True][m][q], rel=0.01), (m, q)
