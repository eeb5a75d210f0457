"""KV dtypes in transit: engines' spellings accepted, weight-only formats refused by name."""

from __future__ import annotations

import pytest

from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.perf.kv_transfer import TRANSIT_DTYPES, check_transit_dtype, kv_transfer


@pytest.mark.parametrize("name", ["int8_wo", "w4a8", "mxfp4", "fp32", "w4a16", ""])
def test_a_weight_only_or_unknown_transit_dtype_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown transit dtype '{name}'") as exc:
        kv_transfer(get_model("llama-3.1-8b"), 1000, transit_dtype=name)
    listed = str(exc.value).split("one of ")[1]
    assert listed == ", ".join(TRANSIT_DTYPES)
    assert "int8_wo" not in listed and "mxfp4" not in listed


def test_an_engine_spelling_in_transit_is_the_catalog_dtype() -> None:
    assert check_transit_dtype("FP8_E4M3") == check_transit_dtype("fp8_e5m2") == "fp8"
    m = get_model("llama-3.1-8b")
    alias = kv_transfer(m, 1000, transit_dtype="fp8_e4m3")
    plain = kv_transfer(m, 1000, transit_dtype="fp8")
    assert alias.transit_dtype == "fp8"
    assert alias.total_bytes == plain.total_bytes == kv_transfer(m, 1000).total_bytes / 2


def test_int4_in_transit_counts_its_group_scales() -> None:
    m = get_model("llama-3.1-8b")
    bf16 = kv_transfer(m, 1000).total_bytes
    # 0.5 B per value + one FP16 scale per 128 values = 0.515625 B, against 2 B
    assert kv_transfer(m, 1000, transit_dtype="int4").total_bytes == pytest.approx(
        bf16 * 0.515625 / 2
    )
