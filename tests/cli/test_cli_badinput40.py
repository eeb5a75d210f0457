"""CLI, fortieth bad-input pass: an output file never replaces one of the run's inputs (the
root's --gpu-file / --efficiency-file, a --model config.json, an empirical:FILE length source),
an infinite SLO / --tpot is refused as not finite (not 'did you mean inf?'), an empty --model
is named as empty, and a pool with two '@GPU' says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.cli.helpers import run_cli
from tests.plan._synth39 import write_synthetic

REF = Path(__file__).resolve().parents[3] / "shared" / "data" / "reference" / "hf_configs"
QWEN3_8B = REF / "Qwen--Qwen3-8B_config.json"  # a real config.json, copied into tmp
SIM = ("simulate", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--deployment", "tp1")
LOAD = "poisson:rate=2,n=5,isl=16,osl=4"


def _measured(tmp: Path) -> Path:
    return write_synthetic(tmp / "m.csv", {"mem_eta": 0.7}, ("Qwen/Qwen3-32B",))


def _refused(rc: int, out: str, err: str, flag: str, input_flag: str) -> None:
    assert rc != 0 and out == ""
    assert err.startswith(f"error: {flag} ") and f"is the {input_flag} file" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("root_flag", "name", "text", "cmd", "out_flag"),
    [
        ("--gpu-file", "gpus.yaml", "mygpu:\n  base: h100-sxm\n",
         ("calibrate", "--params", "mem_eta"), "--out"),
        ("--efficiency-file", "eff.yaml", "engines: {vllm: {mem_eta: 0.7}}\n",
         ("accuracy",), "--rows"),
    ],
)  # fmt: skip
def test_an_output_never_replaces_a_root_input(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    root_flag: str,
    name: str,
    text: str,
    cmd: tuple[str, ...],
    out_flag: str,
) -> None:
    # calibrate --out onto the --gpu-file, accuracy --rows onto the --efficiency-file: refused
    # before any work, the input left as it was
    f = tmp_path / name
    f.write_text(text)
    args = (*cmd, "--measured", _measured(tmp_path), out_flag, f)
    rc, out, err = run_cli(capsys, root_flag, f, *args)
    _refused(rc, out, err, out_flag, root_flag)
    assert f.read_text() == text


def test_calibrate_out_still_merges_into_the_efficiency_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    overlay = tmp_path / "eff.yaml"
    overlay.write_text("engines: {sglang: {mem_eta: 0.7}}\n")
    args = ("--measured", _measured(tmp_path), "--params", "mem_eta", "--out", overlay)
    rc, _, err = run_cli(capsys, "--efficiency-file", overlay, "calibrate", *args, "--no-holdout")
    assert rc == 0, err
    assert "sglang" in overlay.read_text() and "vllm" in overlay.read_text()  # merged


@pytest.mark.skipif(not QWEN3_8B.is_file(), reason="no shared/data/reference checkout")
@pytest.mark.parametrize("as_folder", [False, True])
def test_simulate_chrome_trace_never_replaces_the_model_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, as_folder: bool
) -> None:
    config = tmp_path / "config.json"
    shutil.copy(QWEN3_8B, config)
    before = config.read_text()
    model = tmp_path if as_folder else config
    sim = ("simulate", "--model", model, *SIM[3:], "--workload", LOAD)
    rc, out, err = run_cli(capsys, *sim, "--chrome-trace", config)
    _refused(rc, out, err, "--chrome-trace", "--model")
    assert config.read_text() == before
    json.loads(before)  # still the config it was


def test_simulate_requests_out_never_replaces_an_empirical_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "lens.csv"
    text = "input_length,output_length\n10,5\n20,6\n"
    trace.write_text(text)
    load = f"poisson:rate=2,n=5,isl=empirical:{trace},osl=4"
    rc, out, err = run_cli(capsys, *SIM, "--workload", load, "--requests-out", trace)
    _refused(rc, out, err, "--requests-out", "--workload isl=empirical:")
    assert trace.read_text() == text


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--slo-ttft", "inf"), "error: --slo-ttft=inf must be a finite number of seconds"),
        (("--slo-tpot", "inf"), "error: --slo-tpot=inf must be a finite number of seconds"),
    ],
)
def test_an_infinite_slo_is_refused_as_not_finite(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], said: str
) -> None:
    rc, out, err = run_cli(capsys, *SIM, "--workload", LOAD, *args)
    assert rc != 0 and out == ""
    assert err.startswith(said) and "did you mean" not in err, err


def test_an_infinite_ratio_tpot_is_refused_as_not_finite(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run_cli(capsys, "ratio", "-m", "qwen3-8b", "-g", "h100-sxm", "--tpot", "inf")
    assert rc != 0 and out == ""
    assert err.startswith("error: --tpot=inf must be a finite number of seconds"), err


@pytest.mark.parametrize("model", ["", "  "])
def test_an_empty_model_is_named_as_empty(capsys: pytest.CaptureFixture[str], model: str) -> None:
    rc, out, err = run_cli(capsys, "simulate", "--model", model, *SIM[3:], "--workload", LOAD)
    assert rc != 0 and out == ""
    assert err.startswith("error: empty model name"), err


def test_a_pool_with_two_gpus_says_one_per_pool(capsys: pytest.CaptureFixture[str]) -> None:
    dep = "1P:tp1@h100@h200+1D:tp1"
    rc, out, err = run_cli(capsys, *SIM[:5], "--deployment", dep, "--workload", LOAD)
    assert rc != 0 and out == ""
    assert "one '@GPU' per pool" in err and "expected a GPU name" not in err, err
