"""Hand-derived checks of prefix-cache hits and eviction, chunked prefill and closed loops."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload


def _col(res: object, name: str) -> list[float]:
    return [float(x) for x in res.request_table()[name]]  # type: ignore[attr-defined]


# ---- prefix cache: hit tokens skip their prefill work, not their attention pairs ---------------
def _pf(n: int, cached: int) -> float:
    """Prefill step of n new tokens after `cached` ones: 0.01 + 1e-4 n + 1e-8 pairs, s, with
    pairs = n x cached + n (n + 1) / 2 (each new token attends to all before it and itself)."""
    return 0.01 + 1e-4 * n + 1e-8 * (n * cached + n * (n + 1) / 2)


@pytest.mark.parametrize("exact", [False, True])
def test_prefix_hits_partial_whole_and_evicted_by_hand(exact: bool) -> None:
    """One agg instance, 100-token blocks, a 2-block LRU cache, one at a time (1 s apart).
    R0 [1 2 3]: miss, 300 tokens; inserted tail first (3, 2, 1): the cap of 2 evicts 3.
    R1 [1 2 4]: hits 1 2 (200 tokens), computes 100 after 200; then holds 2, 1 (4 evicted).
    R2 [1 2]: its whole prompt is cached, but the last token is recomputed (to sample the
    first token): hit 199, 1 token after 199. R3 [4]: evicted, a miss of 100."""
    m = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_pair_s=1e-8)
    wl = Workload(
        np.array([300, 300, 200, 100], np.int32), np.full(4, 2, np.int32),
        np.array([0.0, 1.0, 2.0, 3.0]), hash_offsets=np.array([0, 3, 6, 8, 9]),
        hash_ids=np.array([1, 2, 3, 1, 2, 4, 1, 2, 4]), block_tokens=100,
    )  # fmt: skip
    inst = InstanceSpec("agg", m, prefix_cache_blocks=2)
    res = simulate(SimConfig(instances=(inst,), routing="prefix", exact=exact), wl)
    assert list(res.columns["hit"]) == [0, 200, 199, 0]
    want = [_pf(300, 0), _pf(100, 200), _pf(1, 199), _pf(100, 0)]
    assert _col(res, "ttft") == pytest.approx(want, abs=1e-12)
    s = res.summary()
    assert s["instances"][0]["prefix_hit_blocks"] == 4  # 2 + 2 blocks looked up and found
    assert s["prefix_hit_rate"] == pytest.approx(399 / 900)


# ---- chunked prefill: a 3x-budget prompt takes 3 mixed steps beside a running decode ----------
@pytest.mark.parametrize("exact", [False, True])
def test_three_chunk_prompt_beside_a_decode_by_hand(exact: bool) -> None:
    """Agg, chunk budget 101 tokens incl. decodes; t = 0.01 + 1e-4 tokens + 1e-6 ctx +
    1e-3 decoding seqs. A (50 in, 4 out) at 0 s: prefilled alone, 0.015 s. B (300 in, 3 out)
    at 1 ms: steps 2-4 each A's decode (1 token, ctx 50, 51, 52: the first decode counts the
    prompt) + 100 of B's tokens: 0.02115, 0.021151, 0.021152 s. A's tokens 2-4 end those
    steps (its ITL gaps are the mixed step times) and B's first token ends step 4. Then B
    alone: ctx 300, 301: 0.0114, 0.011401 s."""
    m = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_ctx_s=1e-6, per_seq_s=1e-3)
    inst = InstanceSpec("agg", m, chunk_budget=101)
    wl = Workload(np.array([50, 300], np.int32), np.array([4, 3], np.int32), np.array([0, 1e-3]))
    res = simulate(SimConfig(instances=(inst,), exact=exact, trace=True), wl)
    mixed = [0.02115, 0.021151, 0.021152]
    first_b = 0.015 + sum(mixed)
    assert _col(res, "first") == pytest.approx([0.015, first_b], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([first_b, first_b + 0.022801], abs=1e-12)
    steps = [e for e in res.trace_events if e[1] == "mixed"]
    # (duration s, prompt tokens, decoding sequences) of each step: A's prompt, then 3 mixed
    assert [e[3] for e in steps] == pytest.approx([0.015, *mixed], abs=1e-12)
    assert [(e[4], e[5]) for e in steps] == [(50, 0)] + [(100, 1)] * 3
    assert res.itl.gaps == 3 + 2
    assert res.itl.mean() == pytest.approx((sum(mixed) + 0.022801) / 5, rel=1e-6)


# ---- closed loop: a client's next request leaves think_s after its previous finishes ---------
@pytest.mark.parametrize("exact", [False, True])
def test_closed_loop_think_time_by_hand(exact: bool) -> None:
    """Two clients, think 0.1 s, one agg instance with max_batch 1, 100-token prompts with
    one output token (its prefill, 0.11 s, emits it). Both send at 0: R0 [0, 0.11],
    R1 [0.11, 0.22]. R0's client sends R2 at 0.21; it waits for R1: [0.22, 0.33]; R1's
    sends R3 at 0.32: [0.33, 0.44]; R2's sends R4 at 0.43: [0.44, 0.55]; R3's sends R5 at
    0.54: [0.55, 0.66]. Each waits 0.01 s, so e2e = 0.12 s past the first two."""
    inst = InstanceSpec("agg", LinearStepModel(base_s=0.01, per_token_s=0.001), max_batch=1)
    wl = Workload(np.full(6, 100, np.int32), np.full(6, 1, np.int32))
    res = simulate(
        SimConfig(instances=(inst,), exact=exact), wl,
        Arrivals("closed", concurrency=2, think_s=0.1),
    )  # fmt: skip
    arr = [0.0, 0.0, 0.21, 0.32, 0.43, 0.54]
    fin = [0.11, 0.22, 0.33, 0.44, 0.55, 0.66]
    assert _col(res, "arrival") == pytest.approx(arr, abs=1e-12)
    assert _col(res, "finish") == pytest.approx(fin, abs=1e-12)
    assert _col(res, "pf_start") == pytest.approx([0, 0.11, 0.22, 0.33, 0.44, 0.55], abs=1e-12)
    s = res.summary()
    assert s["duration_s"] == pytest.approx(0.66)
    assert s["throughput_rps"] == pytest.approx(6 / 0.66)
    # Little over the run: the area of requests in the system / 0.66 s = sum of e2e / 0.66
    e2e = sum(f - a for f, a in zip(fin, arr, strict=True))
    assert s["little"]["L_time_avg"] == pytest.approx(e2e / 0.66, rel=1e-9)


# ---- swap preemption on a chunked aggregated instance -----------------------------------------
@pytest.mark.parametrize("exact", [False, True])
def test_swap_on_a_chunked_instance_by_hand(exact: bool) -> None:
    """Agg, chunk budget 20, KV for 24 tokens, t = 0.01 + 0.001 x tokens, PCIe 1e6 B/s at
    1000 B/token. A (10, 6 out), B (10, 5 out) at 0: A's prompt alone, 0.02 s; A's decode +
    B's 10 tokens, 0.021 s (to 0.041: B's first token); a batch-of-2 step, 0.012 s (0.053):
    KV 12 + 11 = 23, the next step needs 2 more > 24, so B (newest, 11 tokens) is swapped
    out: 11 x 1000 B / 1e6 B/s = 0.011 s blocking the instance. A's last 3 steps (0.011 s)
    end at 0.097; B's swap-in (0.011 s) then its 3 steps: 0.097 + 0.011 + 0.033 = 0.141."""
    inst = InstanceSpec("agg", LinearStepModel(base_s=0.01, per_token_s=0.001),
                        kv_capacity_tokens=24, chunk_budget=20, pcie_bytes_per_s=1e6)  # fmt: skip
    cfg = SimConfig(instances=(inst,), kv_bytes_per_token=1000, preemption="swap", exact=exact,
                    trace=True)  # fmt: skip
    wl = Workload(np.array([10, 10], np.int32), np.array([6, 5], np.int32), np.zeros(2))
    res = simulate(cfg, wl)
    assert res.preemptions == 1
    assert _col(res, "first") == pytest.approx([0.02, 0.041], abs=1e-12)
    assert _col(res, "finish") == pytest.approx([0.097, 0.141], abs=1e-12)
    swaps = [(e[2], e[3]) for e in res.trace_events if e[1] == "swap"]  # (start, duration)
    assert [x for s in swaps for x in s] == pytest.approx([0.053, 0.011, 0.097, 0.011])
    assert res.instances[0]["utilisation"] == pytest.approx(1.0)  # copies are busy time
