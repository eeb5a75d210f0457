"""plan.calibrate: the fit finds a known efficiency from rows the model itself produced, stays
within the physical bounds, and refuses unknown parameters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.plan._synth39 import write_synthetic

from pdplan.errors import ConfigError
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.measured import read_measured
from pdplan.plan import calibrate as cal

pytest.importorskip("scipy")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[cal.Case]:
    path = write_synthetic(tmp_path_factory.mktemp("cal") / "m.csv", {"mem_eta": 0.65})
    setup = cal.FitSetup(("mem_eta",))
    out, skipped = cal.fit_cases(read_measured(path), "vllm", None, setup)
    assert skipped == 0 and len(out) == 8
    return out


def test_the_fit_moves_toward_the_truth_and_the_error_drops(cases: list[cal.Case]) -> None:
    setup = cal.FitSetup(("mem_eta",))
    start = {"mem_eta": get_efficiency("vllm").mem_eta}
    assert start["mem_eta"] > 0.85  # the packaged value, far from the truth 0.65
    fitted = cal.fit(cases, start, setup, maxiter=2)
    assert abs(fitted["mem_eta"] - 0.65) < 0.02
    before = cal.ape_stats(cal.ratios(cases, start, setup))
    after = cal.ape_stats(cal.ratios(cases, fitted, setup))
    assert before["tpot"]["median"] > 10  # % off: the packaged value streams too fast
    assert after["tpot"]["median"] < 2 < before["tpot"]["median"] / 5


def test_held_out_by_model_fits_each_model_on_the_other(cases: list[cal.Case]) -> None:
    group = cal.group_of(cases)
    assert group is not None and group[0] == "model"
    setup = cal.FitSetup(("mem_eta",))
    by = cal.held_out(cases, {"mem_eta": 0.9}, setup, 2, group[1])
    assert len(by) == 2 and all(r.shape == (4, 2) for r in by.values())
    # the truth is one value for both models: each held-out model is predicted well
    assert cal.ape_stats(np.vstack(list(by.values())))["tpot"]["median"] < 3


def test_search_variables_stay_within_bounds_and_round_trip() -> None:
    names = ("mem_eta", "step_s")
    for x in (-50.0, 0.0, 50.0):
        vals = cal.to_params(np.array([x, x]), names)
        for n, v in vals.items():
            lo, hi, _ = cal.BOUNDS[n]
            assert lo <= v <= hi
    vals = {"mem_eta": 0.7, "step_s": 1e-3}
    back = cal.to_params(cal.from_params(vals, names), names)
    assert back == pytest.approx(vals, rel=1e-9)
    assert cal.at_bound("mem_eta", 0.92) and not cal.at_bound("mem_eta", 0.75)


def test_unknown_params_are_refused_with_the_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown parameter.*nosuch.*fittable: gemm_eta"):
        cal.check_params(["mem_eta", "nosuch"])
    with pytest.raises(ConfigError, match="no parameter"):
        cal.check_params(["", " "])
    assert cal.check_params(["mem_eta", " mem_eta", "step_s"]) == ("mem_eta", "step_s")


def test_the_estimate_default_leaves_out_what_only_the_simulator_reads() -> None:
    est = cal.default_params("estimate")
    assert "bench_rounds" not in est and "ttft_overhead_s" not in est and "mem_eta" in est
    assert "bench_rounds" in cal.default_params("sim")
    assert "bench_rounds" not in cal.default_params("sim", "random")


def test_rows_of_another_engine_or_gpu_are_not_cases(tmp_path: Path) -> None:
    path = write_synthetic(tmp_path / "m.csv", {}, models=("Qwen/Qwen3-32B",))
    setup = cal.FitSetup(("mem_eta",))
    assert cal.fit_cases(read_measured(path), "sglang", None, setup) == ([], 0)
    assert cal.fit_cases(read_measured(path), "vllm", "b200", setup) == ([], 0)
    assert len(cal.fit_cases(read_measured(path), "vllm", "h100-sxm", setup)[0]) == 4
