"""Black-box round 12: a --map time_unit that cannot apply (datetime timestamps, or no time
column) is said, not reported as the unit the times were read in."""

from __future__ import annotations

from pathlib import Path

from pdplan.workload import read_workload


def test_time_unit_on_datetimes_is_flagged_not_claimed(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("ts,i,o\n2024-01-01T00:00:00Z,100,10\n2024-01-01T00:00:02Z,100,10\n")
    wl = read_workload(p, mapping="input=i,output=o,time=ts,time_unit=ms")
    assert list(wl.arrival_s) == [0.0, 2.0]  # datetimes: the unit changes nothing
    assert "time_unit" not in wl.meta  # `simulate` said "timestamps read in ms" from it
    assert any("time_unit=ms does not apply" in w for w in wl.meta["warnings"])
    plain = read_workload(p, mapping="input=i,output=o,time=ts")
    assert not plain.meta["warnings"]


def test_time_unit_without_a_time_column_is_flagged(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("i,o\n100,10\n200,10\n")
    wl = read_workload(p, mapping="input=i,output=o,time_unit=ms")
    assert wl.arrival_s is None
    assert any("no time column" in w for w in wl.meta["warnings"])


def test_numeric_times_keep_their_unit(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("t,i,o\n0,100,10\n1500,100,10\n")
    wl = read_workload(p, mapping="input=i,output=o,time=t,time_unit=ms")
    assert list(wl.arrival_s) == [0.0, 1.5] and wl.meta["time_unit"] == "ms"
    assert not wl.meta["warnings"]
