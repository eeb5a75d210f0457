"""CLI, forty-second bad-input pass: other scripts' digits inside trace files are refused with
file and line (int() read '１0' as 10), an explicit empty --gpu-file / --efficiency-file is
refused instead of read as left out, and `kv --efficiency` names its flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.helpers import run_cli

HEAD = "timestamp,input_length,output_length\n"


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("a.csv", HEAD + "0,10,5\n1,１0,3\n", "a.csv:3: length '１0': '１' is not an ASCII digit"),
        ("b.csv", HEAD + "0,10,5\n١,10,3\n", "b.csv:3: timestamp '١': '١' is not an ASCII digit"),
        (
            "c.jsonl",
            '{"timestamp": 0, "input_length": "２", "output_length": 5}\n',
            "c.jsonl:1: length '２': '２' is not an ASCII digit",
        ),
    ],
)
def test_foreign_digits_in_a_trace_name_file_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, said: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    rc, out, err = run_cli(capsys, "workload", "inspect", path)
    assert rc == 2 and out == ""
    assert said in err and "Traceback" not in err


def test_skip_bad_drops_only_the_foreign_digit_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEAD + "0,10,5\n1,１0,3\n2,20,4\n", encoding="utf-8")
    rc, out, _ = run_cli(capsys, "workload", "inspect", path, "--skip-bad", "--json")
    assert rc == 0
    assert '"requests": 2' in out


@pytest.mark.parametrize("flag", ["--gpu-file", "--efficiency-file"])
def test_an_empty_file_option_is_refused(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    rc, out, err = run_cli(capsys, flag, "", "ratio")
    assert rc == 2 and out == ""
    assert f"{flag} was given an empty path" in err


def test_kv_efficiency_nan_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "kv", "--efficiency", "nan")
    assert rc == 2
    assert "--efficiency=nan must be a number in (0, 1]" in err
