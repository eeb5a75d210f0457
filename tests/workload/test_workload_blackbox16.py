"""Black-box round 16: an epoch-ms column read as seconds is refused as such (numpy read
'1700000000500' as a year), a JSONL trace whose first line is bad is still detected (the bad
line is named or skipped), token counts in a length spec are whole, a Parquet file's columns
explain a failed detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.errors import InputError
from pdplan.workload import parse_length_spec, read_workload, synthesize
from pdplan.workload.values import parse_time_ns

_MS_ROWS = "ts,prompt,gen\n1700000000500,10,1\n1700000001500,20,2\n1700000003500,30,3\n"


def test_an_epoch_ms_digit_string_is_not_read_as_a_year() -> None:
    with pytest.raises(ValueError, match="over 1e12 s"):
        parse_time_ns("1700000000500", 1.0)  # was (5460814646781542400, None): year 2143
    assert parse_time_ns("1700000000500", 1e-3) == (None, pytest.approx(1700000000.5))


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz"])
def test_epoch_ms_read_as_seconds_names_the_unit(tmp_path: Path, name: str) -> None:
    trace = tmp_path / name
    if name.endswith(".gz"):
        import gzip

        trace.write_bytes(gzip.compress(_MS_ROWS.encode()))
    else:
        trace.write_text(_MS_ROWS)
    mapping = "input=prompt,output=gen,time=ts"
    # was: 3 requests over 7.8e9 s from 1973, 'timestamps not sorted' (int64 wrap-around)
    with pytest.raises(InputError, match=r":2: timestamp over 1e12 s .*time_unit"):
        read_workload(trace, mapping=mapping)
    with pytest.raises(InputError, match="all 3 skipped"):
        read_workload(trace, mapping=mapping, skip_bad=True)
    wl = read_workload(trace, mapping=mapping + ",time_unit=ms")
    assert wl.arrival_s is not None and wl.arrival_s.tolist() == pytest.approx([0.0, 1.0, 3.0])


def test_a_jsonl_epoch_ms_column_read_as_seconds_is_counted_by_reason(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    rows = [json.dumps({"ts": t, "i": 5, "o": 1}) for t in (0, 1, 1700000000500)]
    trace.write_text("\n".join(rows) + "\n")
    wl = read_workload(trace, mapping="input=i,output=o,time=ts", skip_bad=True)
    (reason,) = wl.meta["skipped"]  # was 'bad timestamp' (as a NaN is), no unit named
    assert len(wl) == 2 and reason.startswith("timestamp over 1e12 s") and "time_unit" in reason


def _mooncake_lines(n: int) -> list[str]:
    return [
        json.dumps(
            {"timestamp": i * 1000, "input_length": 600, "output_length": 5, "hash_ids": [0, i + 1]}
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("fmt", [None, "mooncake"])
def test_a_bad_first_jsonl_line_is_named_not_taken_as_the_columns(
    tmp_path: Path, fmt: str | None
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_len\n' + "\n".join(_mooncake_lines(4)) + "\n")
    # was 'cannot tell the trace format (jsonl with columns [])', or with --format mooncake
    # 'needs columns ...; the file has []', with or without --skip-bad
    with pytest.raises(InputError, match=r"t\.jsonl:1: not valid JSON"):
        read_workload(trace, fmt=fmt)
    wl = read_workload(trace, fmt=fmt, skip_bad=True)
    assert len(wl) == 4 and wl.meta["skipped"] == {"not valid JSON": 1}
    assert wl.meta["format"] == "mooncake" and wl.has_hashes


def test_two_objects_on_the_first_line_are_a_bad_line(tmp_path: Path) -> None:
    lines = _mooncake_lines(3)
    trace = tmp_path / "t.jsonl"
    trace.write_text(lines[0] + " " + lines[1] + "\n" + lines[2] + "\n")
    with pytest.raises(InputError, match=r":1: not valid JSON"):
        read_workload(trace)


@pytest.mark.parametrize(
    "spec", ["fixed:1.5", "uniform:1.5:3.7", "uniform:2:10.5", "lognormal:100:0.5:150.5"]
)
def test_a_fractional_token_count_is_refused(spec: str) -> None:
    # was: fixed:1.5 drew 1 token every time, uniform:1.5:3.7 drew 1..3 (while '1.5' alone
    # is refused)
    with pytest.raises(InputError, match="token counts must be whole numbers"):
        parse_length_spec(spec)
    with pytest.raises(InputError, match="whole numbers"):
        synthesize(n=10, input=spec)


def test_a_zero_lognormal_cap_is_refused_and_fractional_mean_and_sigma_pass() -> None:
    with pytest.raises(InputError, match="MAX >= 1"):
        parse_length_spec("lognormal:100:0.5:0")  # was: every length capped at 1, a warning
    spec = parse_length_spec("lognormal:100.5:0.25:150")
    assert (spec.a, spec.b, spec.cap) == (100.5, 0.25, 150)
    assert parse_length_spec("fixed:1e3").a == 1000.0


def test_a_parquet_without_the_columns_lists_its_columns(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = tmp_path / "t.parquet"
    pq.write_table(pa.table({"timestamp": [0], "input_length": [5]}), trace)
    with pytest.raises(InputError) as info:
        read_workload(trace)
    # was 'cannot tell the trace format (parquet): not text (binary bytes)'
    assert "['timestamp', 'input_length']" in str(info.value)
    assert "binary" not in str(info.value)
