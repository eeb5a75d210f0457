"""kv_usage routing / pairing: load by share of each instance's KV pool (llm-d's
kv-cache-utilization scorer), so a pool on a larger GPU takes more of the traffic."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.sim.helpers import AGG, DECODE, PREFILL, lengths_workload

from pdplan.errors import ConfigError
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.sim.config import PAIRINGS, ROUTINGS

SMALL, LARGE = 60_000, 180_000  # KV pools, tokens: one instance with 3x the other's


def _agg_pair(caps: tuple[int, int], routing: str) -> SimConfig:
    insts = tuple(InstanceSpec("agg", AGG, kv_capacity_tokens=c) for c in caps)
    return SimConfig(instances=insts, routing=routing)


def _run(cfg: SimConfig, n: int = 600, rate: float = 40.0) -> np.ndarray:
    wl = lengths_workload(n, seed=3)
    return simulate(cfg, wl, Arrivals("poisson", rate=rate)).columns["p_inst"]


def test_policies_are_listed() -> None:
    assert "kv_usage" in ROUTINGS and "kv_usage" in PAIRINGS


def test_kv_usage_sends_more_to_the_larger_pool() -> None:
    by_share = np.bincount(_run(_agg_pair((SMALL, LARGE), "kv_usage")), minlength=2)
    by_tokens = np.bincount(_run(_agg_pair((SMALL, LARGE), "least_tokens")), minlength=2)
    assert by_share[1] > 1.8 * by_share[0]  # ~3x the pool: well over twice the requests
    assert by_tokens[1] < 1.3 * by_tokens[0]  # least_tokens splits tokens about evenly
    assert by_share.sum() == by_tokens.sum() == 600


def test_kv_usage_on_equal_pools_picks_as_least_tokens() -> None:
    # equal pools: share order is token order and ties rotate the same way
    a = _run(_agg_pair((SMALL, SMALL), "kv_usage"))
    b = _run(_agg_pair((SMALL, SMALL), "least_tokens"))
    assert np.array_equal(a, b)


def test_kv_usage_pairing_favours_the_larger_decode_pool() -> None:
    ps = (InstanceSpec("prefill", PREFILL, node=0), InstanceSpec("prefill", PREFILL, node=1))
    ds = tuple(
        InstanceSpec("decode", DECODE, node=10 + i, kv_capacity_tokens=c)
        for i, c in enumerate((SMALL, LARGE))
    )
    cfg = SimConfig(instances=ps + ds, pairing="kv_usage")
    res = simulate(cfg, lengths_workload(600, seed=3), Arrivals("poisson", rate=40.0))
    d = np.bincount(res.columns["d_inst"] - 2, minlength=2)
    assert d[1] > 1.8 * d[0] and d.sum() == 600


def test_unknown_policy_still_refused() -> None:
    with pytest.raises(ConfigError, match="routing"):
        dataclasses.replace(_agg_pair((SMALL, SMALL), "kv_usage"), routing="kv")
