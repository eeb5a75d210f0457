"""A hybrid model's per-sequence recurrent state takes KV-pool room in the simulator."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.sim.cluster import Simulator
from pdplan.workload.core import Workload

from .helpers import AGG, aggs, lengths_workload, xpyd

ISL, OSL, ST = 1000, 100, 4000  # tokens; ST: one sequence's state in KV-pool tokens


def _fixed(n: int) -> Workload:
    return Workload(np.full(n, ISL, np.int32), np.full(n, OSL, np.int32))


def _peak_running(cfg: SimConfig, wl: Workload, arr: Arrivals) -> int:
    res = simulate(cfg, wl, arr)
    assert res.summary()["finished"] == len(wl)
    return int(res.timeline_table()["running"].max())


def test_state_bounds_how_many_sequences_run() -> None:
    """Pool = 10 sequences of ISL + OSL + state: never more than 10 run at once; without the
    state the same pool runs ~46 of the 60 clients' requests."""
    cap = 10 * (ISL + OSL + ST)
    arr = Arrivals("closed", concurrency=60)
    held = SimConfig(instances=aggs(1, cap=cap, kv_state_tokens=ST), sample_interval_s=0.01)
    plain = replace(held, instances=aggs(1, cap=cap, kv_state_tokens=0))
    assert _peak_running(held, _fixed(400), arr) <= 10
    assert simulate(held, _fixed(20), arr).summary()["instances"][0]["kv_state_tokens"] == ST
    assert _peak_running(plain, _fixed(400), arr) > 30


def test_kv_pool_is_empty_after_the_run() -> None:
    """Every charge of a sequence's state is given back: agg with preemptions, and xPyD
    (prefill side frees it on transfer, decode side at the finish)."""
    wl = lengths_workload(300, seed=3, isl=800, osl=200)
    for inst in (aggs(2, cap=40_000, kv_state_tokens=1500),
                 xpyd(1, 2, d_cap=40_000, kv_state_tokens=1500)):  # fmt: skip
        cfg = SimConfig(instances=inst)
        sim = Simulator(cfg, wl, Arrivals("poisson", rate=20.0))
        sim.run(math.inf, None)
        assert sim.finished + sim.dropped == len(wl)
        assert all(i.kv_used == 0 for i in sim.inst), [i.kv_used for i in sim.inst]


@pytest.mark.parametrize("kind", ["agg", "xpyd"])
def test_event_skipping_matches_exact_with_state(kind: str) -> None:
    inst = aggs(1, cap=60_000, kv_state_tokens=2000) if kind == "agg" else xpyd(
        1, 1, d_cap=60_000, kv_state_tokens=2000)  # fmt: skip
    cfg = SimConfig(instances=inst)
    wl = lengths_workload(300, seed=2, isl=700, osl=150)
    arr = Arrivals("poisson", rate=8.0)
    fast = simulate(cfg, wl, arr).summary()
    ref = simulate(replace(cfg, exact=True), wl, arr).summary()
    assert fast["finished"] == ref["finished"] == len(wl)
    assert fast["preemptions"] == ref["preemptions"]
    for metric in ("ttft_s", "tpot_s"):
        for q in ("p50", "p99"):
            assert fast[metric][q] == pytest.approx(ref[metric][q], rel=0.01), (metric, q)


def test_request_too_long_beside_its_state_is_dropped_with_the_reason() -> None:
    inst = (InstanceSpec("agg", AGG, kv_capacity_tokens=ISL + OSL + ST - 1, kv_state_tokens=ST),)
    res = simulate(SimConfig(instances=inst), _fixed(3), Arrivals("poisson", rate=1.0))
    s = res.summary()
    assert s["finished"] == 0 and s["dropped"] == 3
    assert "recurrent state" in " ".join(s["drop_reasons"])
    ok = (replace(inst[0], kv_capacity_tokens=ISL + OSL + ST),)
    assert (
        simulate(SimConfig(instances=ok), _fixed(3), Arrivals("poisson", rate=1.0)).summary()[
            "finished"
        ]
        == 3
    )


def test_default_state_tokens_come_from_the_kv_shape() -> None:
    """kv_state_tokens None: ceil(state B / a token's KV B) of the config's KV shape."""
    cfg = SimConfig(instances=aggs(1), kv_bytes_per_token=1000.0, kv_state_bytes=2_500_000.0,
                    kv_layers=10)  # fmt: skip
    sim = Simulator(cfg, _fixed(1), Arrivals("poisson", rate=1.0))
    assert sim.inst[0].st == 2500
    explicit = replace(cfg, instances=aggs(1, kv_state_tokens=7))
    assert Simulator(explicit, _fixed(1), Arrivals("poisson", rate=1.0)).inst[0].st == 7


def test_bad_state_tokens_are_refused() -> None:
    with pytest.raises(ConfigError, match="kv_state_tokens"):
        InstanceSpec("agg", AGG, kv_state_tokens=-1)
