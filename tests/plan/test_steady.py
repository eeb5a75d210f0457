"""plan.steady.estimate_deployment: the Python API behind `pdplan estimate`."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import ConfigError, DoesNotFitError
from pdplan.plan.steady import estimate_deployment


def test_agg_and_disagg() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    agg = estimate_deployment(m, g, isl=2000, osl=200, concurrency=16, layout="tp4")
    dis = estimate_deployment(
        m,
        g,
        isl=2000,
        osl=200,
        concurrency=16,
        prefill_layout="tp4",
        decode_layout="tp8",
        prefill_workers=1,
        decode_workers=1,
    )
    assert agg["mode"] == "agg" and agg["gpus"] == 4
    assert dis["mode"] == "disagg" and dis["gpus"] == 12 and dis["kv_transfer_ms"] > 0
    # a dedicated TP8 decode instance with no prefill interference decodes faster than TP4 agg
    assert dis["estimate"]["tpot_ms"] < agg["estimate"]["tpot_ms"]


def test_refusals() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100")
    with pytest.raises(ConfigError, match="does not divide 64 attention heads"):
        estimate_deployment(m, g, isl=100, osl=10, concurrency=1, layout="tp3")
    with pytest.raises(DoesNotFitError, match="short by"):
        estimate_deployment(m, g, isl=100, osl=10, concurrency=1, layout="tp1")
