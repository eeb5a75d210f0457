"""Black-box round 13: a --map without time= on a trace with a timestamp column records the
column it left unread (meta['time_column_left_out']), for `simulate` to name."""

from __future__ import annotations

from pathlib import Path

from pdplan.workload import read_workload


def _azure(tmp_path: Path) -> Path:
    trace = tmp_path / "azure.csv"
    trace.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n"
    )
    return trace


def test_a_map_without_time_records_the_timestamp_column(tmp_path: Path) -> None:
    wl = read_workload(_azure(tmp_path), mapping="input=ContextTokens,output=GeneratedTokens")
    assert not wl.has_times and wl.meta["time_column_left_out"] == "TIMESTAMP"


def test_nothing_is_recorded_when_the_time_is_read_or_absent(tmp_path: Path) -> None:
    trace = _azure(tmp_path)
    for wl in (
        read_workload(trace),  # detected: Azure, its TIMESTAMP read
        read_workload(trace, mapping="input=ContextTokens,output=GeneratedTokens,time=TIMESTAMP"),
        read_workload(trace, fmt="azure", mapping="output=GeneratedTokens"),  # preset's time
    ):
        assert wl.has_times and "time_column_left_out" not in wl.meta
    bare = tmp_path / "lens.csv"
    bare.write_text("a,b\n100,5\n")
    assert "time_column_left_out" not in read_workload(bare, mapping="input=a,output=b").meta
