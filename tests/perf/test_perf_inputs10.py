"""Bad inputs to the cost-model layer: ragged measured rows, non-finite link speeds."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from pdplan.catalog import get_model
from pdplan.errors import ConfigError
from pdplan.perf.kv_transfer import kv_transfer
from pdplan.perf.measured import REQUIRED, read_measured


def test_ragged_rows_say_how_many_fields(tmp_path: Path) -> None:
    """A short row (or one with extra fields) is reported with the field counts, not as
    "float() argument must be ... 'NoneType'"."""
    cols = list(REQUIRED)
    p = tmp_path / "m.csv"
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerow(["a", "b"])
        w.writerow(["x"] * (len(cols) + 1))
    got = list(read_measured(p))
    assert got[0] == (2, f"expected {len(cols)} comma-separated fields, got 2")
    assert got[1] == (3, f"expected {len(cols)} comma-separated fields, got {len(cols) + 1}")


@pytest.mark.parametrize("gbps", [math.nan, math.inf, 0.0])
def test_link_speed_must_be_positive_and_finite(gbps: float) -> None:
    with pytest.raises(ConfigError, match="positive finite"):
        kv_transfer(get_model("llama-3.1-8b"), 1000, link_gbps=gbps)


def test_in_transit_quantisation_note_counts_the_scales() -> None:
    """NVFP4 carries one FP8 scale per 16 values: 4.5 / 16 bits = 28 % of BF16, scales in."""
    res = kv_transfer(get_model("llama-3.1-8b"), 1000, transit_dtype="fp4")
    note = next(n for n in res.notes if "in transit" in n)
    assert "28%" in note and "scales included" in note
