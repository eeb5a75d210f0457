"""Trace readers, thirty-seventh black-box pass: JSON-array lines, hex lengths in CSV, Parquet
nulls and decimals, and gzip traces cut mid-stream."""

from __future__ import annotations

import gzip
import io
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pdplan.errors import InputError
from pdplan.workload import read_workload

ROW = '{"timestamp": %d, "input_length": %d, "output_length": 3}\n'


@pytest.mark.parametrize("name", ["t.jsonl", "t.csv"])
def test_json_array_lines_are_not_called_csv(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    f.write_text("[1024, 128]\n[2048, 256]\n")
    with pytest.raises(InputError) as e:
        read_workload(f)
    msg = str(e.value)
    assert "(csv" not in msg and "'[1024'" not in msg
    assert "JSON Lines" in msg and "JSON arrays" in msg


def test_a_json_array_line_1_is_a_bad_jsonl_line(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text("[1024, 128]\n" + ROW % (0, 5) + ROW % (1000, 7))
    with pytest.raises(InputError, match=r"t\.jsonl:1: not a JSON object"):
        read_workload(f)
    w = read_workload(f, skip_bad=True)
    assert w.input_len.tolist() == [5, 7] and w.meta["skipped_examples"] == [
        "line 1: not a JSON object"
    ]


def test_a_preset_on_a_jsonl_without_objects_names_line_1(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text("{bad\n{worse\n")
    with pytest.raises(InputError, match=r"t\.jsonl:1: not valid JSON"):
        read_workload(f, fmt="mooncake")
    with pytest.raises(InputError, match="all 2 skipped"):
        read_workload(f, fmt="mooncake", skip_bad=True)


def test_csv_float_lengths_read(tmp_path: Path) -> None:
    """Whole lengths written as floats read (the careful pass takes the batch the fast
    int64 pass refuses)."""
    f = tmp_path / "t.csv"
    f.write_text("timestamp,input_length,output_length\n0,5,1e2\n1000,6.0,2\n")
    w = read_workload(f)
    assert w.input_len.tolist() == [5, 6] and w.output_len.tolist() == [100, 2]


def _parquet(tmp_path: Path, **cols: pa.Array) -> Path:
    f = tmp_path / "t.parquet"
    pq.write_table(pa.table(cols), f)
    return f


def test_a_null_parquet_length_is_a_missing_length(tmp_path: Path) -> None:
    f = _parquet(
        tmp_path,
        input_length=pa.array([1, None, 3], pa.int64()),
        output_length=pa.array([1, 2, 3], pa.int64()),
    )
    with pytest.raises(InputError, match=r"t\.parquet:2: missing length"):
        read_workload(f)


def test_a_null_hash_id_in_parquet_is_a_bad_row_not_hash_0(tmp_path: Path) -> None:
    f = _parquet(
        tmp_path,
        input_length=pa.array([600, 2, 3]),
        output_length=pa.array([1, 2, 3]),
        hash_ids=pa.array([[1, None], [4], [3]]),
    )
    with pytest.raises(InputError, match=r"t\.parquet:1: hash_ids must be a list of integers"):
        read_workload(f)
    w = read_workload(f, skip_bad=True)
    assert w.input_len.tolist() == [2, 3] and w.hash_ids is not None
    assert w.hash_ids.tolist() == [4, 3]


def test_decimal_parquet_columns_read_as_numbers(tmp_path: Path) -> None:
    f = _parquet(
        tmp_path,
        timestamp=pa.array([Decimal("0.5"), Decimal("1000.5")], pa.decimal128(12, 1)),
        input_length=pa.array([Decimal(12), Decimal(7)], pa.decimal128(38, 0)),
        output_length=pa.array([1, 2]),
    )
    w = read_workload(f)
    assert w.input_len.tolist() == [12, 7] and w.arrival_s is not None
    assert w.arrival_s.tolist() == pytest.approx([0.0, 1.0])


@pytest.mark.parametrize(
    ("name", "header", "row"),
    [("t.jsonl.gz", "", ROW), ("t.csv.gz", "timestamp,input_length,output_length\n", "%d,%d,3\n")],
)
def test_a_gzip_cut_mid_stream_names_the_line_it_breaks_off_at(
    tmp_path: Path, name: str, header: str, row: str
) -> None:
    data = (header + "".join(row % (i * 10, i) for i in range(40_000))).encode()
    packed = gzip.compress(data)
    f = tmp_path / name
    f.write_bytes(packed[: len(packed) // 2])
    whole = gzip.GzipFile(fileobj=io.BytesIO(packed[: len(packed) // 2]))
    got = b""
    with pytest.raises(EOFError):
        while piece := whole.read1(1 << 16):
            got += piece
    lines = got.count(b"\n")  # the whole lines before the cut
    for skip in (False, True):
        with pytest.raises(InputError) as e:
            read_workload(f, skip_bad=skip)
        assert f"{name}:{lines + 1}: truncated or corrupt compressed data" in str(e.value)
        assert f"breaks off after line {lines:,}" in str(e.value)


def test_jsonl_read_with_format_csv_says_its_lines_are_json(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text(ROW % (0, 5))
    with pytest.raises(InputError, match=r"its lines are JSON objects \(JSON Lines\)"):
        read_workload(f, fmt="csv")
