"""--map refuses one column read as two things; `synth --arrival` takes any letter case."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.cli import main
from pdplan.errors import InputError
from pdplan.workload import read_workload
from pdplan.workload.formats import parse_mapping


@pytest.mark.parametrize(
    ("text", "keys"),
    [("input=len,output=len", "input and output"), ("input=a,output=b,time=a", "input and time")],
)
def test_one_column_for_two_keys_is_refused(text: str, keys: str) -> None:
    with pytest.raises(InputError, match=f"both {keys}"):
        parse_mapping(text)


def test_distinct_columns_still_map(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("a,b\n5,6\n")
    w = read_workload(f, mapping="input=a,output=b")
    assert w.input_len.tolist() == [5] and w.output_len.tolist() == [6]


def test_arrival_in_capitals_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = [tmp_path / f"{a}.jsonl" for a in ("Gamma", "gamma")]
    for path, arrival in zip(out, ("Gamma", "gamma"), strict=True):
        args = ["workload", "synth", "-o", str(path), "-n", "20", "--arrival", arrival]
        assert main([*args, "--cv", "2"]) == 0, capsys.readouterr().err
    assert out[0].read_bytes() == out[1].read_bytes()
