"""CLI, forty-first bad-input pass: full-width / other scripts' digits in a spec are refused by
name, `workload inspect | synth | convert` keep warnings off stdout, `calibrate --out` never
silently replaces an unrelated file, ratio's NaN / inf / huge --isl is refused, and an empty
option value is refused instead of read as the option left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.helpers import run_cli
from tests.plan._synth39 import write_synthetic

SIM = ("simulate", "--model", "qwen3-8b", "--gpu", "h100-sxm")
LOAD = "poisson:rate=2,n=5,isl=16,osl=4"
# out of order, plus one row with a bad timestamp: a skip and a warning under --skip-bad
TRACE = "timestamp,input_length,output_length\n5,10,5\n1,4,2\n2,20,3\nx,1,1\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((*SIM, "--workload", LOAD, "--deployment", "４P:tp1+8D:tp1"),
         "error: deployment '４P:tp1+8D:tp1': '４' is not an ASCII digit"),
        ((*SIM, "--workload", LOAD, "--deployment", "tp1x٢"),
         "error: deployment 'tp1x٢': '٢' is not an ASCII digit"),
        ((*SIM, "--deployment", "tp1", "--workload", "poisson:rate=２,n=5"),
         "rate=２: '２' is not an ASCII digit"),
        ((*SIM, "--deployment", "tp1", "--workload", "poisson:rate=2,n=5,isl=１6"),
         "bad length spec '１6': '１' is not an ASCII digit"),
        (("estimate", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--layout", "tp２"),
         "error: layout 'tp２': '２' is not an ASCII digit"),
        (("parallel", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--layout", "tp٢"),
         "error: layout 'tp٢': '٢' is not an ASCII digit"),
        (("ratio", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--rates", "1,２"),
         "error: --rates '1,２': '２' is not an ASCII digit"),
        (("workload", "synth", "-o", "s.jsonl", "--duration", "１h"),
         "error: bad duration '１h': '１' is not an ASCII digit"),
        (("workload", "synth", "-o", "s.jsonl", "-n", "5", "--input", "uniform:１:５"),
         "'１', '５' are not ASCII digits"),
        (("workload", "synth", "-o", "s.jsonl", "--duration", "1h", "--curve", "diurnal:24h:０.5"),
         "error: --curve 'diurnal:24h:０.5': '０' is not an ASCII digit"),
        ((*SIM, "--deployment", "1P:tp1+1D:tp1", "--workload", LOAD, "--switch", "１:1:prefill"),
         "error: --switch '１:1:prefill': '１' is not an ASCII digit"),
    ],
)  # fmt: skip
def test_a_digit_other_than_0_to_9_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    said: str,
) -> None:
    # int() / float() read them: 'tp４' ran as tp4, 'rate=２' as 2 req/s
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, *args)
    assert rc == 2 and out == "", out
    assert said in err and "write numbers with 0-9" in err and "Traceback" not in err, err
    assert not (tmp_path / "s.jsonl").exists()


def test_ascii_digits_stillrun_cli(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(
        capsys, *SIM, "--deployment", "1P:tp1+1D:tp1", "--workload", LOAD, "--json"
    )
    assert rc == 0, err


@pytest.mark.parametrize("as_json", [False, True])
def test_inspect_warnings_go_to_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, as_json: bool
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    rc, out, err = run_cli(
        capsys, "workload", "inspect", trace, "--skip-bad", *["--json"] * as_json
    )
    assert rc == 0, err
    if as_json:  # the JSON carries them; stdout stays one JSON document
        d = json.loads(out)
        assert d["warnings"] == ["timestamps not sorted (1 row goes back in time); sorted by time"]
        assert d["skipped"] == {"bad timestamp": 1}
    else:
        assert "timestamps not sorted" not in out and "e.g. line 5" not in out
        assert "requests" in out  # the tables stay on stdout
        assert "warning: timestamps not sorted (1 row goes back in time)" in err
        assert f"warning: skipped 1 row of {trace}: bad timestamp" in err and "e.g. line 5" in err


def test_convert_warnings_go_to_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    rc, out, err = run_cli(capsys, "workload", "convert", trace, tmp_path / "o.jsonl", "--skip-bad")
    assert rc == 0, err
    assert "timestamps not sorted" not in out and "written" in out
    assert "warning: timestamps not sorted" in err


def _calibrate(capsys: pytest.CaptureFixture[str], tmp: Path, *extra: object) -> tuple[int, str]:
    measured = write_synthetic(tmp / "m.csv", {"mem_eta": 0.7}, ("Qwen/Qwen3-32B",))
    args = ("calibrate", "--measured", measured, "--params", "mem_eta", "--no-holdout")
    rc, _, err = run_cli(capsys, *args, *extra)
    return rc, err


def test_calibrate_out_never_silently_replaces_an_existing_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # an earlier fit of another engine, not given as --efficiency-file: replaced whole, it
    # was lost without a word
    prior = tmp_path / "fit.yaml"
    text = "engines: {sglang: {mem_eta: 0.7}}\n"
    prior.write_text(text)
    rc, err = _calibrate(capsys, tmp_path, "--out", prior)
    assert rc == 2 and prior.read_text() == text
    assert err.startswith(f"error: --out {prior} exists: writing the fit over it would lose"), err
    assert f"--efficiency-file {prior} calibrate" in err and "--force" in err
    rc, err = _calibrate(capsys, tmp_path, "--out", prior, "--force")
    assert rc == 0, err
    assert "sglang" not in prior.read_text() and "vllm" in prior.read_text()


def test_calibrate_out_may_fill_an_empty_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "new.yaml"
    out.write_text("")  # mktemp's: nothing to lose
    rc, err = _calibrate(capsys, tmp_path, "--out", out)
    assert rc == 0, err
    assert "vllm" in out.read_text()


def test_calibrate_force_without_out_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, err = _calibrate(capsys, tmp_path, "--force")
    assert rc == 2 and err.startswith("error: --force only applies with --out"), err


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--isl", "nan", "error: --isl=nan must be a finite number of tokens"),
        ("--osl", "inf", "error: --osl=inf must be a finite number of tokens"),
        ("--isl", "1e300", "error: --isl=1e+300 is over 2,147,483,647 tokens"),
    ],
)
def test_ratio_refuses_a_non_finite_or_huge_mean_length(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, said: str
) -> None:
    # NaN / inf crashed as 'internal error: ValueError'; 1e300 printed a 300-digit length
    rc, out, err = run_cli(capsys, "ratio", "--model", "qwen3-8b", "--gpu", "h100-sxm", flag, value)
    assert rc == 2 and out == ""
    assert err.startswith(said) and "internal error" not in err, err


def test_a_prefix_cache_size_in_full_width_digits_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # str.isdigit took '２' (read as 2 blocks)
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}\n'
    )
    sim = (*SIM, "--deployment", "tp1", "--workload", trace)
    rc, out, err = run_cli(capsys, *sim, "--prefix-cache", "２")
    assert rc == 2 and out == ""
    assert err.startswith("error: --prefix-cache='２': use off, auto or a number of blocks"), err
    rc, _, err = run_cli(capsys, *sim, "--prefix-cache", "2", "--json")
    assert rc == 0, err
