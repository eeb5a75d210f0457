"""Bad input, pass 41b: an empty option value (a file, a layout, a GPU) is refused by name, a
run where no measured row was predicted says why on stderr, the layout / deployment /
efficiency-file parsers refuse digits other than 0-9, and a name past the file system's limit
is an error, not an internal one."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.helpers import run_cli

from pdplan._text import foreign_digits
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.sim.deploy import parse_deployment

SIM = ("simulate", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--deployment", "tp1")
LOAD = "poisson:rate=2,n=5,isl=16,osl=4"
MEASURED = "measured.csv"  # written by the test into tmp_path (its name only matters)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        ((*SIM, "--workload", LOAD, "--requests-out", ""), "--requests-out"),
        ((*SIM, "--workload", LOAD, "--timeline-out", ""), "--timeline-out"),
        ((*SIM, "--workload", LOAD, "--chrome-trace", ""), "--chrome-trace"),
        ((*SIM, "--workload", ""), "--workload"),
        (("accuracy", "--measured", MEASURED, "--rows", ""), "--rows"),
        (("accuracy", "--measured", ""), "--measured"),
        (("calibrate", "--measured", MEASURED, "--out", ""), "--out"),
        (("calibrate", "--measured", MEASURED, "--gpu", ""), "--gpu"),
        (("workload", "inspect", "t.csv", "--plot", ""), "--plot"),
        (("workload", "inspect", ""), "FILE"),
        (("workload", "convert", "t.csv", ""), "DST"),
        (("workload", "synth", "-n", "3", "-o", ""), "--out"),
        (("kv", "--gpu", ""), "--gpu"),
        (("kv", "--prefill-layout", ""), "--prefill-layout"),
        (("parallel", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--layout", ""), "--layout"),
        (("estimate", "--layout", ""), "--layout"),
        (("ratio", "--decode-layout", ""), "--decode-layout"),
    ],
)  # fmt: skip
def test_an_empty_value_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    flag: str,
) -> None:
    # read as the option left out: an output silently not written (exit 0), a fit over every
    # GPU's rows for --gpu '', the default layout for --layout ''
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("timestamp,input_length,output_length\n0,10,5\n")
    (tmp_path / MEASURED).write_text("id\n")
    rc, out, err = run_cli(capsys, *args)
    assert rc == 2 and out == "", out
    assert err.startswith(f"error: {flag} '' is empty: give "), err


def test_no_row_predicted_names_the_reason_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 'could not be predicted (reasons above)': above was stdout, gone to a file or to --json
    f = tmp_path / "m.csv"
    f.write_text("id,backend,model_path,system,mode,isl,osl,silicon_ttft_ms,silicon_tpot_ms\nx;y\n")
    rc, _, err = run_cli(capsys, "accuracy", "--measured", f, "--json")
    assert rc == 2
    assert "the only row could not be predicted: unreadable row: expected 9" in err, err
    assert "(e.g. line 2)" in err and "reasons above" not in err


@pytest.mark.parametrize("text", ["tp４", "tp8-ep٨", "tp=２"])
def test_layout_parse_refuses_other_digits(text: str) -> None:
    with pytest.raises(ConfigError, match="is not an ASCII digit; write numbers with 0-9"):
        Layout.parse(text)


@pytest.mark.parametrize("text", ["４P:tp4+8D:tp8", "tp4x２", "1P:tp1+1D:tp１"])
def test_parse_deployment_refuses_other_digits(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_deployment(text)
    assert str(e.value).startswith(f"deployment {text!r}: ") and "ASCII digit" in str(e.value)


def test_foreign_digits_lists_each_once_in_order() -> None:
    assert foreign_digits("tp4-pp2") is None
    assert foreign_digits("٣x２x٣") == "'٣', '２' are not ASCII digits; write numbers with 0-9"
    assert foreign_digits("tp²") == "'²' is not an ASCII digit; write numbers with 0-9"


def test_an_efficiency_file_value_in_full_width_digits_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "eff.yaml"
    f.write_text('engines: {vllm: {mem_eta: "０.５"}}\n')
    rc, out, err = run_cli(capsys, "--efficiency-file", f, "estimate")
    assert rc == 2 and out == ""
    assert "engines.vllm.mem_eta: must be a number, not '０.５'" in err, err


@pytest.mark.parametrize(
    "args",
    [("models",), ("kv", "--model"), ("estimate", "--gpu", "h100-sxm", "--model")],
)
def test_a_name_past_the_file_system_limit_is_an_error_not_a_crash(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    # a model name is tried as a path first: Path.is_file raised ENAMETOOLONG, shown as
    # 'internal error: OSError' with the whole 5,000-character name
    rc, out, err = run_cli(capsys, *args, "a" * 5000)
    assert rc == 2 and out == ""
    assert err == f"error: {'a' * 40}...{'a' * 20} (5,000 chars): File name too long\n", err
