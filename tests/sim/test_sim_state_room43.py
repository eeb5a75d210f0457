"""A layout whose KV memory cannot hold one sequence's recurrent state is refused up front."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError, DoesNotFitError
from pdplan.parallel.layout import Layout
from pdplan.perf.memory import GiB, plan_memory
from pdplan.sim import SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import aggs

# Nemotron-H-56B (Mamba-2 hybrid) at TP4 on RTX 5090s: the BF16 weights fit, and what is left
# for the KV cache (~0.1 GiB per GPU) is less than one sequence's SSM state (~0.11 GiB per GPU)
MODEL, GPU, LAYOUT = "nemotron-h-56b", "rtx-5090", Layout(tp=4)


def _one(isl: int, osl: int) -> Workload:
    return Workload(np.array([isl], np.int32), np.array([osl], np.int32), np.zeros(1))


def test_plan_memory_refuses_no_room_for_one_state() -> None:
    with pytest.raises(DoesNotFitError) as e:
        plan_memory(get_model(MODEL), get_gpu(GPU), LAYOUT)
    msg = str(e.value)
    assert "recurrent state" in msg and "short by" in msg and "rtx-5090" in msg
    assert e.value.need_bytes > e.value.have_bytes > 0
    # check=False still plans it (what the caller asked for), with the pool below one state
    plan = plan_memory(get_model(MODEL), get_gpu(GPU), LAYOUT, check=False)
    assert plan.kv_bytes < plan.state_bytes_per_seq + plan.kv_bytes_per_token
    assert (e.value.need_bytes - e.value.have_bytes) / GiB < 1.0


def test_plan_memory_keeps_a_layout_with_room() -> None:
    """The same model at TP8 has room for many states: planned as before."""
    plan = plan_memory(get_model(MODEL), get_gpu(GPU), Layout(tp=8))
    assert plan.kv_bytes > 4 * plan.state_bytes_per_seq


def test_instance_whose_pool_cannot_hold_a_state_is_a_config_error() -> None:
    cfg = SimConfig(instances=aggs(1, cap=300, kv_state_tokens=500))
    with pytest.raises(ConfigError, match=r"300 tokens cannot hold a one-token sequence"):
        simulate(cfg, _one(100, 10))


def test_instance_with_room_for_one_state_runs() -> None:
    """Pool 520 tokens, state 500: a 10 + 10 request fits exactly and finishes."""
    cfg = SimConfig(instances=aggs(1, cap=520, kv_state_tokens=500))
    s = simulate(cfg, _one(10, 10)).summary()
    assert s["finished"] == 1 and s["dropped"] == 0
