"""`pdplan calibrate`: a fit that raises its own rows' median error is warned about, and a file
without the asked engine's rows says which engines and GPUs it has."""

from __future__ import annotations

from typing import Any

import pytest
from tests.plan._synth39 import write_synthetic

from pdplan.cli import main
from pdplan.cli._calibrate_render import warnings_of


def _stats(ttft: float, tpot: float) -> dict[str, Any]:
    return {"ttft": {"median": ttft, "p90": None}, "tpot": {"median": tpot, "p90": None}}


def _rep(before: tuple[float, float], after: tuple[float, float]) -> dict[str, Any]:
    return {
        "params": [{"name": "mem_eta", "after": 0.8, "low": 0.6, "high": 0.92, "at_bound": False}],
        "rows": 500,
        "before": _stats(*before),
        "after": _stats(*after),
        "held_out": None,
    }


def test_a_fit_worse_on_its_own_rows_is_warned_about() -> None:
    got = warnings_of(_rep((29.4, 12.0), (30.9, 11.0)), holdout=False)
    assert len(got) == 1 and "raised its own rows' median TTFT error (29.4 -> 30.9 %)" in got[0]
    assert warnings_of(_rep((29.4, 12.0), (29.9, 11.0)), holdout=False) == []  # within 5 %


def test_no_rows_for_the_engine_names_what_the_file_has(
    capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    pytest.importorskip("scipy")
    path = write_synthetic(tmp_path_factory.mktemp("ux") / "m.csv", {"mem_eta": 0.65})
    rc = main(["calibrate", "--measured", str(path), "--engine", "sglang"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "no predictable aggregated sglang rows" in err and "the file has vllm on h100" in err
