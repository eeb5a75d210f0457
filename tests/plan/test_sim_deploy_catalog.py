"""plan.sim_deploy over the whole model catalog: every preset simulates, agg and xPyD, sanely."""

from __future__ import annotations

import math

import pytest

from pdplan import Arrivals, simulate_deployment, synthesize
from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model, list_models
from pdplan.plan.layout_pick import default_layout

N = 60  # requests: enough for a batch to form and finish, small enough for ~100 presets
WL = synthesize(n=N, rate=3.0, input="lognormal:1500:0.8:8000", output="lognormal:120:0.8:600")


def _layout(key: str, gpu: str, engine: str) -> str:
    """The layout `pdplan simulate` would pick for the model on the GPU (weights + KV room)."""
    return str(default_layout(get_model(key), get_gpu(gpu), engine=engine))


def _check(key: str, engine: str, deployment: str, arrivals: Arrivals) -> None:
    res = simulate_deployment(key, "h200", deployment, WL, arrivals, engine=engine)
    s = res.summary()
    assert s["finished"] + s["dropped"] == N, (key, deployment)  # conservation
    for metric in ("ttft_s", "tpot_s", "e2e_s"):
        for q in ("p50", "p99"):
            v = s[metric][q]
            assert math.isfinite(v) and v > 0, (key, deployment, metric, q, v)
    assert s["ttft_s"]["p50"] <= s["e2e_s"]["p50"], key  # the first token is not after the last
    # a decode step of any preset on H200 lasts more than 0.1 ms and less than 1 s
    assert 1e-4 < s["tpot_s"]["p50"] < 1.0, (key, s["tpot_s"]["p50"])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("key", list_models())
def test_every_catalog_model_simulates_aggregated_and_disaggregated(key: str, engine: str) -> None:
    lay = _layout(key, "h200", engine)
    _check(key, engine, f"{lay}x1", Arrivals("closed", concurrency=8))
    _check(key, engine, f"1P:{lay}+1D:{lay}", Arrivals("trace"))
