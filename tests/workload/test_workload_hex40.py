"""CSV lengths written in hex ('0x10'): Arrow's integer parser reads them as numbers and the
careful pass refuses them, so the fast path hands such files to the careful pass, which names
the line; either way a file reads the same."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import pdplan.workload.files as files
from pdplan.errors import InputError
from pdplan.workload import read_workload
from pdplan.workload.files import holds_hex_field

HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _write(tmp_path: Path, body: str, gz: bool = False) -> Path:
    path = tmp_path / ("t.csv.gz" if gz else "t.csv")
    data = (HEAD + body).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_a_hex_length_is_refused_with_its_line(tmp_path: Path, gz: bool) -> None:
    path = _write(tmp_path, "0.0,20,5\n1.0,0x10,5\n2.0,30,6\n", gz)
    with pytest.raises(InputError, match=r":3: non-numeric length"):
        read_workload(path)
    w = read_workload(path, skip_bad=True)  # skipped like any other bad row
    assert w.input_len.tolist() == [20, 30] and w.meta["reader"] == "careful"


def test_a_clean_file_keeps_the_fast_path(tmp_path: Path) -> None:
    w = read_workload(_write(tmp_path, "0.0,20,5\n1.0,16,5\n"))
    assert w.input_len.tolist() == [20, 16] and w.meta["reader"] == "arrow"


def test_a_hex_looking_other_column_still_reads(tmp_path: Path) -> None:
    # an id column the reader does not use: the careful pass reads the same requests
    path = tmp_path / "ids.csv"
    path.write_text("id,TIMESTAMP,ContextTokens,GeneratedTokens\n0xab,0.0,20,5\n0xcd,1.0,7,3\n")
    w = read_workload(path)
    assert w.input_len.tolist() == [20, 7] and w.output_len.tolist() == [5, 3]


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("a,b\n0x1,2\n", True),
        ("a,b\n1,0X2\n", True),
        ('a,b\n1,"0x2"\n', True),
        ("a,b\n1, 0x2\n", True),
        ("a;b\n1;-0x2\n", True),
        ("a,b\n1,a0x2\n", False),
        ("a,b\n1,x0\n", False),
        ("max,box\n1,2\n", False),
    ],
)
def test_the_scan_finds_fields_that_start_with_0x(tmp_path: Path, text: str, hit: bool) -> None:
    path = tmp_path / "s.csv"
    path.write_text(text)
    assert holds_hex_field(str(path)) is hit


@pytest.mark.parametrize("block", [1, 2, 3, 5])
def test_the_scan_sees_a_mark_split_across_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(files, "_SCAN_BYTES", block)
    for text, hit in [("ab,0x1\n", True), ("abc,d0x1\n", False), ("0x\n", True)]:
        path = tmp_path / "b.csv"
        path.write_text(text)
        assert holds_hex_field(str(path)) is hit, (text, block)
