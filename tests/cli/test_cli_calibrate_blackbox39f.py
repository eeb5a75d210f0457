"""Black-box checks of `pdplan calibrate` and `--efficiency-file` (pass 39f): what --no-holdout
says, a disaggregated-only file, an overlay naming one engine or GPU twice, one-line YAML
errors, the fit's bounds, the written overlay reproducing the fitted errors, and the sim
method's progress notes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.plan._synth39 import HEADER, write_synthetic

from pdplan.cli import main

pytest.importorskip("scipy")

REAL = Path(__file__).resolve().parents[3] / "shared/data/calibration/measured_serving.csv"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    rc, out, err = _run(capsys, *args, "--json")
    assert rc == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cal39f") / "m.csv"
    return str(write_synthetic(path, {"mem_eta": 0.7}))


@pytest.fixture(scope="module")
def one_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cal39f1") / "one.csv"
    return str(write_synthetic(path, {"mem_eta": 0.7}, models=("Qwen/Qwen3-32B",)))


def _cal(*extra: str) -> tuple[str, ...]:
    return ("calibrate", "--params", "mem_eta", "--maxiter", "1", *extra)


def test_no_holdout_does_not_claim_the_rows_cover_one_model(
    capsys: pytest.CaptureFixture[str], two_models: str, one_model: str
) -> None:
    rep = _json(capsys, *_cal("--measured", two_models, "--no-holdout"))
    assert rep["held_out"] is None
    assert not any("one model on one GPU" in w for w in rep["warnings"])
    rc, _, err = _run(capsys, *_cal("--measured", two_models, "--no-holdout"))
    assert rc == 0 and "one model on one GPU" not in err
    # one model on one GPU, check asked for: said, in the table's warnings and in --json
    rep = _json(capsys, *_cal("--measured", one_model))
    assert rep["held_out"] is None
    assert any("one model on one GPU: no held-out check" in w for w in rep["warnings"])


def test_one_factor_is_singular(capsys: pytest.CaptureFixture[str], one_model: str) -> None:
    rep = _json(capsys, *_cal("--measured", one_model))
    assert any(w.startswith("4 rows for 1 factor (fewer than 10") for w in rep["warnings"])


def test_a_disaggregated_only_file_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "d.csv"
    row = "r0,s,vllm,1,Qwen/Qwen3-32B,h100_sxm,,disagg,1024,256,,,8,2,1,,2,1,90,9\n"
    f.write_text(HEADER + row)
    rc, out, err = _run(capsys, "calibrate", "--measured", str(f))
    assert rc == 2 and out == "" and "all disaggregated" in err and str(f) in err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("engines:\n  vllm: {mem_eta: 0.8}\n  atom: {step_s: 0.002}\n", "engines.atom: vllm again"),
        ("engines:\n  trtllm: {}\n  TensorRT-LLM: {}\n", "engines.TensorRT-LLM: trtllm again"),
        (
            "engines:\n  vllm:\n    gpus:\n      h100: {mem_eta: 0.8}\n      h100_sxm: {}\n",
            "engines.vllm.gpus.h100_sxm: h100-sxm again (given as h100)",
        ),
    ],
)
def test_one_engine_or_gpu_twice_is_refused_not_silently_dropped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, match: str
) -> None:
    f = tmp_path / "twice.yaml"
    f.write_text(text)
    rc, _, err = _run(capsys, "--efficiency-file", str(f), "estimate")
    assert rc == 2 and match in err and str(f) in err


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"engines:\n  vllm: [mem_eta: 0.8\n", ":3: not valid YAML: expected ',' or ']'"),
        (b"\tengines:\n", ":1: not valid YAML: found character '\\t'"),
        (b"engines:\n  vllm: {mem_eta: 0.8} # caf\xe9\n", ": not UTF-8 text"),
    ],
)
def test_a_broken_yaml_overlay_is_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    raw: bytes,
    match: str,
) -> None:
    monkeypatch.delenv("PDPLAN_DEBUG", raising=False)
    f = tmp_path / "broken.yaml"
    f.write_bytes(raw)
    rc, _, err = _run(capsys, "--efficiency-file", str(f), "estimate")
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"error: {f}") and match in err


def test_a_truth_past_the_bound_ends_on_the_bound(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    m = write_synthetic(tmp_path / "low.csv", {"mem_eta": 0.45})  # below the 0.6 bound
    rep = _json(capsys, *_cal("--measured", str(m), "--no-holdout"))
    (p,) = rep["params"]
    assert 0.6 <= p["after"] <= 0.92 and p["at_bound"]
    assert any("mem_eta ended at its lower bound" in w for w in rep["warnings"])


def test_the_written_overlay_reproduces_the_fitted_errors(
    capsys: pytest.CaptureFixture[str], two_models: str, tmp_path: Path
) -> None:
    out = tmp_path / "fit.yaml"
    rep = _json(capsys, *_cal("--measured", two_models, "--out", str(out), "--no-holdout"))
    acc = _json(
        capsys, "--efficiency-file", str(out), "accuracy", "--measured", two_models,
        "--mode", "agg",
    )  # fmt: skip
    overall = acc["agg"]["overall"]
    for key in ("ttft", "tpot"):  # the file keeps 6 significant figures
        assert overall[f"{key}_ape"]["median"] == pytest.approx(
            rep["after"][key]["median"], rel=1e-3, abs=1e-3
        )


def test_the_sim_method_tells_its_progress_and_names_simulate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "s.csv"
    rows = [
        f"r{i},s,vllm,1,{m},h100_sxm,,agg,512,32,,,1,2,1,,2,1,60,8\n"
        for i, m in enumerate(("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B"))
    ]
    f.write_text(HEADER + "".join(rows))
    fit = tmp_path / "sim.yaml"
    rc, out, err = _run(
        capsys, *_cal("--measured", str(f), "--method", "sim", "--out", str(fit), "--json")
    )
    assert rc == 0, err
    # a sim fit describes the simulator: its header points at simulate, not estimate
    assert f"# use: pdplan --efficiency-file {fit} simulate ..." in fit.read_text()
    assert "note: --method sim: fitting on 2 rows" in err
    assert "note: held-out fit 2 of 2 (without model meta-llama/Llama-3.1-8B-Instruct)" in err
    assert json.loads(out)["held_out"]["by"] == "model"  # stdout stays JSON


@pytest.mark.skipif(not REAL.is_file(), reason="shared measured data not present")
def test_a_real_one_gpu_cut_fits_as_h100_sxm_spelled_any_way(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = REAL.read_text(encoding="utf-8").splitlines(keepends=True)
    keep = [ln for ln in lines[1:] if ",vllm," in ln and ",h100_sxm," in ln and ",agg," in ln]
    cut = tmp_path / "cut.csv"
    cut.write_text(lines[0] + "".join(keep[:12]))
    for spelled in ("h100_sxm", "H100", "h100-sxm"):
        rep = _json(capsys, *_cal("--measured", str(cut), "--gpu", spelled, "--no-holdout"))
        assert rep["gpu"] == "h100-sxm" and rep["rows"] >= 1
