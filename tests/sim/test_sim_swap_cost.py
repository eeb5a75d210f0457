"""Swap preemption costs time: the PCIe copies block the instance, so TPOT, E2E, throughput
and utilisation pay for them, in event-skipping and exact modes alike."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import aggs, lengths_workload

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # prefill 100 tok 0.11 s; decode 0.01+0.001B


def _two(pcie: float, exact: bool) -> SimConfig:
    inst = InstanceSpec("agg", STEP, kv_capacity_tokens=240, pcie_bytes_per_s=pcie)
    return SimConfig(
        instances=(inst,), kv_bytes_per_token=1000, preemption="swap", exact=exact, trace=True
    )


@pytest.mark.parametrize("exact", [False, True])
def test_swap_blocks_the_instance_by_hand(exact: bool) -> None:
    """A, B: 100-token prompts, 50 tokens out, both at t=0, KV for 240 tokens.
    Prefill A [0, 0.11], B [0.11, 0.22]; 20 decode steps of 0.012 s (B=2) fill KV to
    200 + 40 = 240 at 0.46; B (the newest, 100 + 20 tokens) is swapped out: 120 tok x 1000
    B/tok / 1e5 B/s = 1.2 s, so A resumes at 1.66 and its last 29 steps (0.011 s) end at
    1.979; B's swap-in takes 1.2 s more (to 3.179), then its 29 steps end at 3.498. With a
    free PCIe the copies take no time: 0.779 and 1.098."""
    wl = Workload(np.array([100, 100], np.int32), np.array([50, 50], np.int32), np.zeros(2))
    free = simulate(_two(1e30, exact), wl)
    slow = simulate(_two(1e5, exact), wl)
    assert free.preemptions == slow.preemptions == 1
    assert list(free.columns["finish"]) == pytest.approx([0.779, 1.098])
    assert list(slow.columns["finish"]) == pytest.approx([1.979, 3.498])
    swaps = [e for e in slow.trace_events if e[1] == "swap"]
    assert [x for e in swaps for x in e[2:4]] == pytest.approx([0.46, 1.2, 1.979, 1.2])
    assert slow.metric("tpot")[0] == pytest.approx((1.979 - 0.11) / 49)
    assert slow.instances[0]["utilisation"] == pytest.approx(1.0)  # the copies are busy time


def _swap_cfg(pcie: float) -> SimConfig:
    return SimConfig(instances=aggs(2, cap=20_000, pcie_bytes_per_s=pcie), preemption="swap")


def test_slow_pcie_costs_throughput_tpot_and_e2e() -> None:
    wl, arr = lengths_workload(1500, seed=11), Arrivals("poisson", rate=10)
    fast = simulate(_swap_cfg(64e9), wl, arr).summary()
    slow = simulate(_swap_cfg(2e8), wl, arr).summary()
    assert fast["preemptions"] > 0 and slow["preemptions"] > 0
    assert slow["throughput_rps"] < 0.8 * fast["throughput_rps"]
    assert slow["tpot_s"]["mean"] > 1.5 * fast["tpot_s"]["mean"]
    assert slow["e2e_s"]["mean"] > 1.5 * fast["e2e_s"]["mean"]
    # ITL and TPOT see the same stalls (per token vs per request weighting aside)
    assert slow["itl_s"]["mean"] == pytest.approx(slow["tpot_s"]["mean"], rel=0.1)


@pytest.mark.parametrize("pcie", [1e9, 2e8])
def test_slow_swap_skip_matches_exact(pcie: float) -> None:
    wl, arr = lengths_workload(1500, seed=11), Arrivals("poisson", rate=10)
    cfg = _swap_cfg(pcie)
    fast = simulate(cfg, wl, arr).summary()
    ref = simulate(replace(cfg, exact=True), wl, arr).summary()
    assert fast["finished"] == ref["finished"] == 1500
    assert ref["preemptions"] > 0 and fast["preemptions"] == ref["preemptions"]
    for metric in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        for q in ("p50", "p99"):
            assert fast[metric][q] == pytest.approx(ref[metric][q], rel=0.01), (metric, q)
