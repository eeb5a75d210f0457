"""The top-level public API: every name in pdplan.__all__ resolves, and a tiny end-to-end run."""

from __future__ import annotations

import pdplan


def test_every_public_name_resolves() -> None:
    for name in pdplan.__all__:
        assert getattr(pdplan, name) is not None, name


def test_end_to_end_through_the_public_api() -> None:
    m, g = pdplan.get_model("llama-3.1-8b"), pdplan.get_gpu("h100")
    cm = pdplan.CostModel(m, g, pdplan.Layout(tp=1))
    mem = pdplan.plan_memory(m, g, pdplan.Layout(tp=1))
    est = pdplan.estimate_agg(cm, 1024, 128, 8, kv_capacity_tokens=mem.kv_capacity_tokens)
    assert 0 < est.tpot_s < est.ttft_s * 10
    r = pdplan.ratio_from_numbers(4000, 500, 8000, 2000)
    assert r.ratio_str == "2:1"


def test_entry_points_return_the_exported_result_types() -> None:
    m, g = pdplan.get_model("llama-3.1-8b"), pdplan.get_gpu("h100")
    cm = pdplan.CostModel(m, g, pdplan.Layout(tp=1))
    assert isinstance(pdplan.estimate_agg(cm, 512, 64, 4), pdplan.Estimate)
    assert isinstance(pdplan.plan_memory(m, g, pdplan.Layout(tp=1)), pdplan.MemoryPlan)
    assert isinstance(pdplan.kv_transfer(m, 1000), pdplan.KVTransfer)
    assert isinstance(pdplan.check_layout(m, pdplan.Layout(tp=2)), pdplan.LayoutCheck)
    assert isinstance(pdplan.ratio_from_numbers(4000, 500, 8000, 2000), pdplan.RatioResult)
