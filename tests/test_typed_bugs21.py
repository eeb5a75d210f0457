"""Defects found by triaging mypy's errors (round 21), each pinned by the input that hit it."""

from __future__ import annotations

import importlib

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.sim.arrivals import Arrivals
from pdplan.workload import Workload


def _dsa_model() -> CostModel:
    """DeepSeek-V3.2 (DSA top-2048) at TP8 on H200: decode is piecewise affine in context."""
    cm = CostModel(get_model("deepseek-v3.2"), get_gpu("h200"), Layout(tp=8))
    assert cm.decode_kink == 2048
    return cm


def test_decode_affine_secant_does_not_shadow_the_side_below_the_kink() -> None:
    # mypy: sim/decode.py "Too many arguments for decode_affine" pointed at the (batch, ctx)
    # form; CostModel cached the secant (ctx None) and the lower side under one key, so the
    # first of the two asked for answered both
    below = _dsa_model().decode_affine(1, 100)
    secant = _dsa_model().decode_affine(1)
    assert below != secant  # two different fits (the test means nothing otherwise)
    cm = _dsa_model()
    assert cm.decode_affine(1) == secant
    assert cm.decode_affine(1, 100) == below
    assert cm.decode_affine(1) == secant
    assert cm.decode_affine(1, 100_000) == _dsa_model().decode_affine(1, 100_000)


def test_simulator_probe_leaves_the_lower_fit_intact() -> None:
    # the simulator's construction probe (sim/checks.py) asks decode_affine(1); a lone
    # request decoding below the kink must then still get the lower side's slope
    cm = _dsa_model()
    inst = InstanceSpec(role="agg", step_model=cm, max_batch=8, kv_capacity_tokens=100_000)
    wl = Workload([1024], [4])
    simulate(SimConfig(instances=(inst,)), wl, Arrivals("closed", concurrency=1))
    assert cm.decode_affine(1, 1030) == _dsa_model().decode_affine(1, 1030)


@pytest.mark.parametrize("pkg", ["pdplan.catalog", "pdplan.parallel", "pdplan.sim"])
def test_subpackage_all_names_exist(pkg: str) -> None:
    mod = importlib.import_module(pkg)
    names = list(mod.__all__)
    assert len(names) == len(set(names)), f"{pkg}.__all__ repeats a name"
    assert [n for n in names if not hasattr(mod, n)] == []


def test_workload_and_cli_all_names_exist() -> None:
    for pkg in ("pdplan.workload", "pdplan.cli"):
        mod = importlib.import_module(pkg)
        assert [n for n in mod.__all__ if getattr(mod, n, None) is None] == [], pkg
