"""Review 39g: integer epoch us / ns times keep their precision (the first arrival is
subtracted in the column's own unit, as int64), uint64 hash ids survive `convert` unsigned,
and `inspect` prints a numeric time origin."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli_json import cli_json as _json

from pdplan.cli import main
from pdplan.errors import InputError
from pdplan.workload import read_workload, write_workload

_BASE = {"us": 1_700_000_000_000_000, "ns": 1_700_000_000_000_000_000}  # epoch, 2023-11
_PER_S = {"us": 10**6, "ns": 10**9}  # ticks per second
_OFFSETS = [0, 7, 5_000_007, 5_000_114]  # ticks from the first arrival
_BIG = [2**64 - 1, 2**63, 12_345]  # uint64 hash ids, two past int64


def _write(path: Path, times: list[int], bad_row: bool = False) -> None:
    rows = [(t, 10 + k, 2) for k, t in enumerate(times)]
    if path.suffix == ".csv":
        text = "t,a,b\n" + "".join(f"{t},{a},{b}\n" for t, a, b in rows)
        path.write_text(text + ("x,1,1\n" if bad_row else ""))
    elif path.suffix == ".jsonl":
        lines = [json.dumps({"t": t, "a": a, "b": b}) for t, a, b in rows]
        path.write_text("\n".join(lines + (["{"] if bad_row else [])) + "\n")
    else:
        t = pa.array([r[0] for r in rows], pa.int64())
        pq.write_table(pa.table({"t": t, "a": [r[1] for r in rows], "b": [2] * len(rows)}), path)


# bad_row True: the careful (line by line) pass of CSV / JSONL; Parquet has one path
_PATHS = [(".csv", False), (".csv", True), (".jsonl", False), (".jsonl", True), (".parquet", False)]


@pytest.mark.parametrize("unit", ["us", "ns"])
@pytest.mark.parametrize(("ext", "bad_row"), _PATHS)
def test_integer_epoch_times_keep_sub_us_precision(
    tmp_path: Path, unit: str, ext: str, bad_row: bool
) -> None:
    path = tmp_path / f"t{ext}"
    _write(path, [_BASE[unit] + o for o in _OFFSETS], bad_row)
    w = read_workload(path, mapping=f"input=a,output=b,time=t,time_unit={unit}", skip_bad=True)
    assert w.arrival_s is not None
    want = np.array(_OFFSETS, dtype=np.float64) / _PER_S[unit]
    np.testing.assert_allclose(w.arrival_s, want, rtol=1e-15, atol=1e-15)  # was off ~1e-7 s
    assert w.meta[f"time_origin_{unit}"] == _BASE[unit]  # exact, as read
    assert w.meta["time_origin_s"] == pytest.approx(1.7e9)


def test_a_fraction_after_integer_ns_still_reads(tmp_path: Path) -> None:
    # the CSV fast path types the column int64 from an integer first row; a later fraction
    # goes to the careful pass, which reads it (float64, as before)
    path = tmp_path / "t.csv"
    path.write_text("t,a,b\n1000,1,1\n1500.5,1,1\n3000,1,1\n")
    w = read_workload(path, mapping="input=a,output=b,time=t,time_unit=ns")
    assert w.arrival_s is not None
    np.testing.assert_allclose(w.arrival_s, [0.0, 500.5e-9, 2000e-9], rtol=1e-12)


@pytest.mark.parametrize("ext", [".csv", ".jsonl"])
def test_float_second_and_ms_times_read_as_before(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"t{ext}"
    if ext == ".csv":
        path.write_text("t,a,b\n0.5,1,1\n1.25,1,1\n2,1,1\n")
    else:
        path.write_text("".join(f'{{"t": {t}, "a": 1, "b": 1}}\n' for t in ("0.5", "1.25", "2")))
    w = read_workload(path, mapping="input=a,output=b,time=t")
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 0.75, 1.5]
    assert w.meta["time_origin_s"] == 0.5 and "time_origin_ms" not in w.meta
    ms = read_workload(path, mapping="input=a,output=b,time=t,time_unit=ms")
    assert ms.arrival_s is not None
    np.testing.assert_allclose(ms.arrival_s, [0.0, 0.75e-3, 1.5e-3], rtol=1e-12)
    assert ms.meta["time_origin_ms"] == 0.5


def _uint64_trace(path: Path) -> None:
    hashes = pa.array([_BIG, [_BIG[0], 7]], pa.list_(pa.uint64()))
    pq.write_table(pa.table({"a": [1024, 700], "b": [1, 2], "h": hashes}), path)


def test_uint64_hash_ids_keep_their_bits(tmp_path: Path) -> None:
    src = tmp_path / "u.parquet"
    _uint64_trace(src)
    w = read_workload(src, mapping="input=a,output=b,hashes=h")
    assert w.meta["hash_ids_type"] == "uint64"
    assert w.hash_ids is not None
    assert w.hash_ids.view(np.uint64).tolist() == [*_BIG, _BIG[0], 7]
    assert w.hash_ids[0] == w.hash_ids[3]  # the same id is the same id (prefix reuse)


@pytest.mark.parametrize("ext", [".parquet", ".jsonl", ".csv"])
def test_uint64_hash_ids_round_trip_through_convert(tmp_path: Path, ext: str) -> None:
    src, dst = tmp_path / "u.parquet", tmp_path / f"out{ext}"
    _uint64_trace(src)
    _json("workload", "convert", src, dst, "--map", "input=a,output=b,hashes=h", "--json")
    if ext == ".parquet":
        col = pq.read_table(dst).column("hash_ids")
        assert pa.types.is_uint64(col.type.value_type)  # was int64, negative values
        assert col.to_pylist() == [_BIG, [_BIG[0], 7]]
    else:
        text = dst.read_text()
        assert str(2**64 - 1) in text and "-" not in text.split("\n", 1)[1]
    back = read_workload(dst, fmt="mooncake", mapping="block_tokens=512")
    assert back.meta.get("hash_ids_type") == "uint64"
    assert back.hash_ids is not None
    assert back.hash_ids.view(np.uint64).tolist() == [*_BIG, _BIG[0], 7]


def test_signed_hash_ids_are_written_signed(tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    src.write_text('{"input_length": 10, "output_length": 1, "hash_ids": [-5, 3]}\n')
    w = read_workload(src)
    assert "hash_ids_type" not in w.meta
    write_workload(w, tmp_path / "s.parquet")
    col = pq.read_table(tmp_path / "s.parquet").column("hash_ids")
    assert pa.types.is_int64(col.type.value_type) and col.to_pylist() == [[-5, 3]]


@pytest.mark.parametrize("rows", [["[-5, 3]", f"[{2**63}]"], [f"[-5, {2**63}]"]])
def test_negative_and_unsigned_hash_ids_in_one_file_are_refused(
    tmp_path: Path, rows: list[str]
) -> None:
    src = tmp_path / "m.jsonl"
    lines = [f'{{"input_length": 10, "output_length": 1, "hash_ids": {h}}}' for h in rows]
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="negative values and values >= 2\\*\\*63"):
        read_workload(src)


def test_inspect_prints_a_numeric_time_origin(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    _write(path, [_BASE["ns"] + o for o in _OFFSETS])
    args = ["workload", "inspect", str(path), "--map", "input=a,output=b,time=t,time_unit=ns"]
    d = _json(*args, "--json")
    assert d["time_origin_ns"] == _BASE["ns"] and d["time_origin_s"] == pytest.approx(1.7e9)
    assert d["span_s"] == pytest.approx(5_000_114e-9, rel=1e-12)  # was 5.000228 ms
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0
    assert f"1700000000.000000 s ({_BASE['ns']} ns)" in out.getvalue()


def test_inspect_prints_seconds_origin(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("t,a,b\n1700000000.5,1,1\n1700000001.5,1,1\n")
    d = _json("workload", "inspect", path, "--map", "input=a,output=b,time=t", "--json")
    assert d["time_origin_s"] == 1700000000.5 and "time_origin_ns" not in d
