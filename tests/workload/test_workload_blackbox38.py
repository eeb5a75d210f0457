"""Trace readers, thirty-eighth black-box pass: a line 1 without its timestamp, null and empty
session ids, Parquet duration timestamps, and --curve errors that name the flag."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pdplan.errors import InputError
from pdplan.workload import read_workload, synthesize, workload_stats

TIMED = '{"timestamp": %d, "input_length": 10, "output_length": 5}\n'
UNTIMED = '{"input_length": 10, "output_length": 5}\n'
NULL_TIME = '{"timestamp": null, "input_length": 10, "output_length": 5}\n'


@pytest.mark.parametrize("first", [UNTIMED, NULL_TIME])
def test_a_jsonl_line_1_without_its_timestamp_is_named(tmp_path: Path, first: str) -> None:
    # line 1 decided the file had no time column: with the key absent every timestamp was
    # dropped silently, with a null every later line was "present in some rows only"
    f = tmp_path / "t.jsonl"
    f.write_text(first + TIMED % 1000 + TIMED % 2000)
    with pytest.raises(InputError, match=r"t\.jsonl:1: missing timestamp"):
        read_workload(f)
    w = read_workload(f, skip_bad=True)
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 1.0]
    assert w.meta["skipped_examples"] == ["line 1: missing timestamp"]


def test_a_later_line_without_its_timestamp_is_named_the_same(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(TIMED % 0 + TIMED % 1000 + UNTIMED)
    with pytest.raises(InputError, match=r"t\.jsonl:3: missing timestamp"):
        read_workload(f)


def test_the_csv_reader_names_a_first_row_without_its_timestamp(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp,input_length,output_length\n,10,5\n1000,10,5\n")
    with pytest.raises(InputError, match=r"t\.csv:2: missing timestamp"):
        read_workload(f)


def _sessions(path: Path) -> tuple[int, np.ndarray]:
    w = read_workload(path)
    assert w.session_id is not None
    return int(workload_stats(w)["sessions"]), w.session_id


@pytest.mark.parametrize("blank", ["null", '""'])
def test_jsonl_null_or_empty_session_ids_are_sessions_of_their_own(
    tmp_path: Path, blank: str
) -> None:
    row = '{"input_length": 10, "output_length": 5, "session_id": %s}\n'
    f = tmp_path / "s.jsonl"
    f.write_text(row % blank + row % blank + row % 7 + row % 7)
    n, ids = _sessions(f)
    assert n == 3  # two without an id, one session 7 (the blanks merged into one: 2)
    assert ids[2] == ids[3] == 7 and ids[0] != ids[1]
    w = read_workload(f)
    assert w.meta["rows_without_session"] == 2
    assert any("2 rows have no session id" in m for m in w.meta["warnings"])


def test_a_jsonl_line_1_without_a_session_key_keeps_the_others(tmp_path: Path) -> None:
    # line 1's keys made session_id no column: the later sessions were dropped
    row = '{"input_length": 10, "output_length": 5, "session_id": %d}\n'
    f = tmp_path / "s.jsonl"
    f.write_text(UNTIMED + row % 1 + row % 1)
    n, ids = _sessions(f)
    assert n == 2 and ids[1] == ids[2] == 1


def test_csv_empty_session_cells_do_not_merge(tmp_path: Path) -> None:
    f = tmp_path / "s.csv"
    f.write_text("input_length,output_length,session_id\n10,5,\n10,5,\n10,5,a\n10,5,a\n")
    assert _sessions(f)[0] == 3


@pytest.mark.parametrize("values", [[None, None, 4, 4], [None, None, "x", "x"], ["", "", "x", "x"]])
def test_parquet_null_session_ids_do_not_merge(tmp_path: Path, values: list[object]) -> None:
    # an integer column's nulls all read as -1, a string column's as one key
    f = tmp_path / "s.parquet"
    pq.write_table(
        pa.table({"input_length": [1, 2, 3, 4], "output_length": [1] * 4, "session_id": values}),
        f,
    )
    assert _sessions(f)[0] == 3


def test_a_skipped_row_is_not_counted_as_without_session(tmp_path: Path) -> None:
    f = tmp_path / "s.csv"
    f.write_text("input_length,output_length,session_id\n10,5,\nx,5,\n10,5,3\n")
    w = read_workload(f, skip_bad=True)
    assert w.meta["rows_without_session"] == 1 and len(w) == 2


@pytest.mark.parametrize(("unit", "ticks"), [("s", 2), ("ms", 2000), ("us", 2 * 10**6)])
def test_parquet_duration_timestamps_are_seconds_offsets(
    tmp_path: Path, unit: str, ticks: int
) -> None:
    # duration[...] columns were 'bad timestamp' on every row; the column carries its own
    # unit, so the Mooncake preset's ms does not apply
    f = tmp_path / "d.parquet"
    t = pa.array([0, ticks // 2, ticks], type=pa.duration(unit))
    pq.write_table(
        pa.table({"timestamp": t, "input_length": [1, 2, 3], "output_length": [1] * 3}), f
    )
    w = read_workload(f)
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 1.0, 2.0]
    assert w.meta["time_column_type"] == f"duration[{unit}]" and "time_unit" not in w.meta


def test_a_duration_column_null_is_a_missing_timestamp(tmp_path: Path) -> None:
    f = tmp_path / "d.parquet"
    t = pa.array([0, None], type=pa.duration("ns"))
    pq.write_table(pa.table({"timestamp": t, "input_length": [1, 2], "output_length": [1, 1]}), f)
    with pytest.raises(InputError, match=r"d\.parquet:2: missing timestamp"):
        read_workload(f)


def test_a_time_unit_given_for_a_duration_column_is_said_not_to_apply(tmp_path: Path) -> None:
    f = tmp_path / "d.parquet"
    t = pa.array([0, 1500], type=pa.duration("ms"))
    pq.write_table(pa.table({"ts": t, "i": [1, 2], "o": [1, 1]}), f)
    w = read_workload(f, mapping="input=i,output=o,time=ts,time_unit=s")
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 1.5]
    assert any("holds durations (duration[ms])" in m for m in w.meta["warnings"])


@pytest.mark.parametrize(
    ("curve", "why"),
    [
        ("diurnal:xx", "bad duration 'xx'"),
        ("diurnal:24h:2", "amplitude '2'"),
        ("points:0=1,zz=2", "bad duration 'zz'"),
        ("points:0=0", "last one > 0"),
        ("bogus", "is not a rate curve"),
        ("points:1h=abc", "is not a rate curve"),
    ],
)
def test_rate_curve_errors_name_the_flag(curve: str, why: str) -> None:
    with pytest.raises(InputError) as e:
        synthesize(n=10, rate_curve=curve)
    assert str(e.value).startswith(f"--curve {curve!r}") and why in str(e.value)


def test_a_curve_zero_over_the_trace_names_the_flag() -> None:
    with pytest.raises(InputError, match=r"^--curve 'points:0=0,1h=0,2h=1' is 0 over"):
        synthesize(duration_s="10m", rate_curve="points:0=0,1h=0,2h=1")


def test_a_curve_kind_in_capitals_is_read() -> None:
    w = synthesize(n=50, rate_curve="Diurnal:1h:0.5")
    assert len(w) == 50
