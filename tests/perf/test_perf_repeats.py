"""A measured file's noise floor: repeated setups against their own geometric mean."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from tests.perf._rows import measured_row

from pdplan.parallel.layout import Layout
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.repeats import repeat_spread, setup_key

ROW = measured_row(model_path="Qwen/Qwen3-32B", version="0.19.0", concurrency=8)


def _runs(*pairs: tuple[float, float], **change: object) -> list[MeasuredRow]:
    return [
        replace(ROW, row_id=f"r{i}", ttft_ms=t, tpot_ms=p, **change)
        for i, (t, p) in enumerate(pairs)
    ]


def test_three_runs_of_one_setup_against_their_geometric_mean() -> None:
    # TTFT 100 / 200 / 400 ms: geometric mean 200 -> errors |200-100|/100 = 100 %, 0 % and
    # |200-400|/400 = 50 %
    # TPOT 10 / 10 / 10 ms: 0 % each
    rep = repeat_spread(_runs((100, 10), (200, 10), (400, 10)))
    assert rep["setups"] == 1
    assert rep["ttft_ape"]["n"] == 3 and rep["ttft_ape"]["median"] == pytest.approx(50.0)
    assert rep["tpot_ape"]["median"] == pytest.approx(0.0, abs=1e-9)


def test_a_copy_of_one_measurement_is_not_a_repeat() -> None:
    # the same run filed in two source files (figures rounded differently): one measurement
    rep = repeat_spread(_runs((338.3364, 6.33272), (338.34, 6.33)))
    assert rep["setups"] == 0 and rep["ttft_ape"] == {"n": 0}
    # a genuinely different second run makes it a repeat
    assert repeat_spread(_runs((338.3364, 6.33272), (360.0, 6.5)))["setups"] == 1


def test_different_setups_do_not_mix() -> None:
    rows = _runs((100, 10)) + _runs((300, 20), layout=Layout(tp=4))
    rows += _runs((120, 11), weight_dtype="fp8")
    assert repeat_spread(rows)["setups"] == 0
    # the engine version splits setups only when asked
    rows = _runs((100, 10)) + _runs((150, 12), version="0.20.0")
    assert repeat_spread(rows)["setups"] == 1
    assert repeat_spread(rows, with_version=True)["setups"] == 0
    assert setup_key(rows[0]) == setup_key(rows[1])
    assert setup_key(rows[0], True) != setup_key(rows[1], True)


def test_one_token_rows_have_no_tpot_floor() -> None:
    rep = repeat_spread(_runs((100, math.nan), (121, math.nan), osl=1))
    assert rep["setups"] == 1 and rep["ttft_ape"]["n"] == 2 and rep["tpot_ape"] == {"n": 0}
    # geometric mean 110: 10 % and 110/121 -> 9.09 %
    assert rep["ttft_ape"]["median"] == pytest.approx((10.0 + 11 / 121 * 100) / 2)
