"""least_tokens pairing weighs a decode instance by the KV its requests will hold (prompt +
output), not by their outputs alone."""

from __future__ import annotations

import numpy as np

from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import DECODE, PREFILL


def _cfg(pairing: str = "least_tokens") -> SimConfig:
    p = InstanceSpec("prefill", PREFILL, node=0, kv_capacity_tokens=500_000)
    ds = [InstanceSpec("decode", DECODE, node=n, kv_capacity_tokens=500_000) for n in (1, 2)]
    return SimConfig(instances=(p, *ds), pairing=pairing)


def _three() -> Workload:
    """A short prompt with a long answer, then two 20k-token prompts with 1k-token answers:
    all three still decoding when the last is paired (~4 s; the answers last >= 10 s)."""
    inp = np.array([100, 20_000, 20_000], np.int32)
    out = np.array([3_000, 1_000, 1_000], np.int32)
    return Workload(inp, out, np.array([0.0, 0.1, 0.2]))


def test_a_long_prompt_goes_where_less_kv_is_held() -> None:
    res = simulate(_cfg(), _three())
    d = res.columns["d_inst"].tolist()
    # the third request's choice: instance 1 holds 100 + 3,000 tokens, instance 2 holds
    # 20,000 + 1,000. By outputs alone (3,000 against 1,000) it went to instance 2, both
    # 20k-token prompts on one instance; weighed by prompt + output it goes to instance 1
    assert d == [1, 2, 1], d
    assert res.summary()["finished"] == 3


def test_every_instance_ends_with_no_outstanding_load() -> None:
    # what routing and pairing add (prompt + output) is what finishing takes away
    from pdplan.sim.arrivals import Arrivals
    from pdplan.sim.cluster import Simulator

    sim = Simulator(_cfg(), _three(), Arrivals("trace"))
    sim.run()
    assert [i.outstanding for i in sim.inst] == [0, 0, 0]
