"""CLI: `pdplan calibrate` fits a known efficiency back from synthetic rows and writes an
overlay that `pdplan --efficiency-file` reads; clear errors for what it cannot fit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.plan._synth39 import HEADER, write_synthetic

from pdplan.cli import _command_named, main

pytest.importorskip("scipy")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_synthetic(tmp_path_factory.mktemp("cal") / "m.csv", {"mem_eta": 0.65}))


def _calibrate(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    rc, out, err = _run(capsys, "calibrate", "--params", "mem_eta", "--maxiter", "2", *extra)
    assert rc == 0, err
    return json.loads(out)


def test_calibrate_finds_the_truth_and_writes_an_overlay(
    capsys: pytest.CaptureFixture[str], measured: str, tmp_path: Path
) -> None:
    out = tmp_path / "fit.yaml"
    rep = _calibrate(capsys, "--measured", measured, "--out", str(out), "--json")
    (p,) = rep["params"]
    assert p["name"] == "mem_eta" and p["before"] > 0.85 and abs(p["after"] - 0.65) < 0.02
    assert rep["after"]["tpot"]["median"] < 2 < rep["before"]["tpot"]["median"] / 5
    assert rep["held_out"]["by"] == "model" and len(rep["held_out"]["groups"]) == 2
    assert any("fewer than 10 per factor" in w for w in rep["warnings"])  # 8 rows, 1 factor
    text = out.read_text()
    assert (
        text.startswith("# pdplan calibrate: vllm") and measured in text and "8 aggregated" in text
    )
    assert yaml.safe_load(text) == {"engines": {"vllm": {"mem_eta": pytest.approx(p["after"])}}}


def test_the_overlay_round_trips_through_efficiency_file(
    capsys: pytest.CaptureFixture[str], measured: str, tmp_path: Path
) -> None:
    out = tmp_path / "fit.yaml"
    _calibrate(capsys, "--measured", measured, "--out", str(out), "--json", "--no-holdout")

    def tpot_error(*root: str) -> float:
        rc, text, err = _run(capsys, *root, "accuracy", "--measured", measured, "--json")
        assert rc == 0, err
        return float(json.loads(text)["agg"]["overall"]["tpot_ape"]["median"])

    assert tpot_error("--efficiency-file", str(out)) < 2 < tpot_error() / 5  # no leak either


def test_a_gpu_fit_is_written_as_a_per_gpu_block(
    capsys: pytest.CaptureFixture[str], measured: str, tmp_path: Path
) -> None:
    out = tmp_path / "fit.yaml"
    rep = _calibrate(capsys, "--measured", measured, "--gpu", "h100", "--out", str(out), "--json")
    assert rep["gpu"] == "h100-sxm"
    block = yaml.safe_load(out.read_text())["engines"]["vllm"]
    assert set(block) == {"gpus"} and set(block["gpus"]["h100-sxm"]) == {"mem_eta"}


def test_the_table_shows_before_after_and_held_out(
    capsys: pytest.CaptureFixture[str], measured: str
) -> None:
    rc, out, err = _run(capsys, "calibrate", "--measured", measured, "--params", "mem_eta",
                        "--maxiter", "1")  # fmt: skip
    assert rc == 0, err
    for word in ("mem_eta", "[0.6, 0.92]", "before", "fitted", "held out (each model"):
        assert word in out
    assert "warning: 8 rows for 1 factor (" in err


def _estimate_tpot(capsys: pytest.CaptureFixture[str], *root: str) -> float:
    args = ("estimate", "--model", "llama-3.1-8b", "--layout", "tp1", "-c", "1", "--json")
    rc, out, err = _run(capsys, *root, *args)
    assert rc == 0, err
    return float(json.loads(out)["estimate"]["tpot_ms"])


def test_halving_mem_eta_raises_estimate_tpot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "half.yaml"
    f.write_text("engines:\n  vllm:\n    mem_eta: 0.46\n")  # the packaged 0.92, halved
    before = _estimate_tpot(capsys)
    assert _estimate_tpot(capsys, "--efficiency-file", str(f)) > 1.5 * before
    monkeypatch.setenv("PDPLAN_EFFICIENCY_FILE", str(f))
    assert _estimate_tpot(capsys) > 1.5 * before
    assert _command_named(["--efficiency-file", str(f), "kv"]) == "kv"


def test_a_bad_efficiency_file_is_one_line_naming_file_and_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("engines: {vllm: {mem_eat: 0.5}}\n")
    rc, _, err = _run(capsys, "--efficiency-file", str(f), "estimate")
    assert rc == 2 and str(f) in err and "mem_eat: unknown efficiency field" in err


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (("--params", "mem_eta,nosuch"), "unknown parameter(s) nosuch; fittable: gemm_eta"),
        (("--params", "bench_rounds"), "the estimate never reads bench_rounds"),
        (("--engine", "sglang"), "no predictable aggregated sglang rows: nothing to fit"),
        (("--gpu", "b200"), "no predictable aggregated vllm rows on b200"),
        (("--method", "fast"), "--method must be estimate or sim"),
        (("--maxiter", "0"), "--maxiter must be at least 1"),
    ],
)
def test_what_cannot_be_fitted_is_refused(
    capsys: pytest.CaptureFixture[str], measured: str, extra: tuple[str, ...], match: str
) -> None:
    rc, out, err = _run(capsys, "calibrate", "--measured", measured, *extra)
    assert rc == 2 and match in err and out == ""


def test_bad_files_several_engines_and_missing_scipy(
    capsys: pytest.CaptureFixture[str],
    measured: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,backend\nx,vllm\n")
    rc, _, err = _run(capsys, "calibrate", "--measured", str(bad))
    assert rc == 2 and "missing column(s)" in err
    two = tmp_path / "two.csv"
    lines = Path(measured).read_text().splitlines(keepends=True)
    two.write_text(HEADER + lines[1] + lines[2].replace(",vllm,", ",sglang,"))
    rc, _, err = _run(capsys, "calibrate", "--measured", str(two))
    assert rc == 2 and "2 engines (sglang, vllm): pick one with --engine" in err
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "scipy" else real(n, *a)
    )
    rc, _, err = _run(capsys, "calibrate", "--measured", measured)
    assert rc == 2 and "pip install 'pdplan[calibrate]'" in err
