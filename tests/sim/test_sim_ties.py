"""Least-loaded routing and pairing spread ties: an idle cluster shares a light load."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.sim.routing import Router, least_loaded
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=1e-4)


def _spaced(n: int) -> Workload:
    """n requests 10 s apart: each finds the whole cluster idle (every instance tied at 0)."""
    return Workload(np.full(n, 100, np.int32), np.full(n, 3, np.int32), np.arange(n) * 10.0)


def test_idle_agg_instances_take_turns() -> None:
    insts = tuple(InstanceSpec("agg", STEP) for _ in range(4))
    res = simulate(SimConfig(instances=insts), _spaced(8))
    assert list(np.bincount(res.columns["p_inst"], minlength=4)) == [2, 2, 2, 2]
    busy = [i["utilisation"] for i in res.summary()["instances"]]
    assert max(busy) == pytest.approx(min(busy))  # was all on instance 0


def test_idle_decode_instances_take_turns() -> None:
    p = (InstanceSpec("prefill", STEP, node=0),)
    d = tuple(InstanceSpec("decode", STEP, node=1 + i) for i in range(3))
    res = simulate(SimConfig(instances=p + d), _spaced(6))
    assert list(np.bincount(res.columns["d_inst"], minlength=4)) == [0, 2, 2, 2]


def test_a_less_loaded_instance_still_wins_over_the_rotation() -> None:
    class _I:
        def __init__(self, o: int) -> None:
            self.outstanding = o

    a, b, c = _I(5), _I(1), _I(5)
    r = Router("least_tokens", 0)
    assert [r.least([a, b, c]) for _ in range(3)] == [b, b, b]
    assert least_loaded([a, c, b], 2) is b and least_loaded([a, c, _I(5)], 1) is c
