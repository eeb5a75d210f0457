"""Arrow record batch -> validated numpy columns, with a reason code for every bad row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pdplan.workload._build import Builder
from pdplan.workload.formats import ColumnMap
from pdplan.workload.values import (
    INT32_MAX,
    MAX_TIME_S,
    TIME_TOO_LARGE,
    BadValue,
    number_array,
    parse_length,
    parse_time_value,
)

if TYPE_CHECKING:
    from collections import Counter

__all__ = ["REASONS", "BatchCols", "add_batch", "batch_columns"]

# reason code -> text (the same texts as values.BadValue, so skip counts merge across paths)
REASONS = (
    "",
    "missing length",
    "non-numeric length",
    "non-integer length",
    "negative length",
    "length too large",
    "missing timestamp",
    "bad timestamp",
    "mixed timestamp formats",
    TIME_TOO_LARGE,
    "hash_ids must be a list of integers",  # the careful JSONL / CSV readers' text
)
_BAD_HASHES = REASONS[-1]
# seconds per tick of an Arrow duration column (pyarrow DurationType.unit: s, ms, us, ns)
_DURATION_UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_CODE = {r: i for i, r in enumerate(REASONS)}


@dataclass
class BatchCols:
    """One batch as numpy columns plus a per-row reason code (0 = good row)."""

    inp: np.ndarray
    out: np.ndarray
    times: np.ndarray | None
    time_kind: str
    code: np.ndarray
    hash_counts: np.ndarray | None = None
    hash_ids: np.ndarray | None = None
    session: np.ndarray | None = None
    time_unit_s: float = 1.0  # seconds per tick of numeric ("num") times


def _decimal_as_float(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A decimal column (SQL / Spark exports) as float64; others as they are. Per value,
    parse_length and parse_time_ns refused Decimal('12') as non-numeric."""
    return col.cast(pa.float64()) if pa.types.is_decimal(col.type) else col


def _lengths(col: pa.Array | pa.ChunkedArray, code: np.ndarray) -> np.ndarray:
    col = _decimal_as_float(col)
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        vals = col.to_numpy(zero_copy_only=False)
        whole = _whole(vals) if pa.types.is_floating(t) and not col.null_count else None
        if whole is not None:
            return whole  # the common case (CSV lengths parse as float64)
        null = np.asarray(col.is_null(), dtype=bool) if col.null_count else None
        if null is not None:  # first: a null reads as NaN, which is no 'non-integer length'
            _mark(code, null, "missing length")
        if pa.types.is_floating(t) or null is not None:
            f = vals.astype(np.float64)
            bad_int = ~np.isfinite(f) | (np.floor(np.nan_to_num(f)) != f)
            _mark(code, bad_int, "non-integer length")
            vals = np.nan_to_num(f, nan=0.0, posinf=0.0, neginf=0.0)
            vals = np.clip(vals, -1.0, float(INT32_MAX) + 1).astype(np.int64)
        _mark(code, vals < 0, "negative length")
        _mark(code, vals > INT32_MAX, "length too large")
        return vals.astype(np.int64, copy=False)
    out = np.zeros(len(col), dtype=np.int64)
    for i, v in enumerate(col.to_pylist()):
        try:
            out[i] = parse_length(v)
        except BadValue as exc:
            _mark_one(code, i, str(exc))
    return out


def _whole(f: np.ndarray) -> np.ndarray | None:
    """f as int64 when every value is a token count, whole and in [0, INT32_MAX], else None
    (NaN, inf and values past int64 do not survive the round trip through int64)."""
    with np.errstate(invalid="ignore"):  # NaN / inf / huge: an invalid cast, caught below
        i = f.astype(np.int64)
    ok = np.array_equal(i, f) and (len(i) == 0 or (i.min() >= 0 and i.max() <= INT32_MAX))
    return i if ok else None


def _times(
    col: pa.Array | pa.ChunkedArray, unit_s: float, code: np.ndarray
) -> tuple[np.ndarray, str]:
    col = _decimal_as_float(col)
    t = col.type
    if pa.types.is_date(t):
        col, t = col.cast(pa.timestamp("ns")), pa.timestamp("ns")
    null = np.asarray(col.is_null(), dtype=bool) if col.null_count else None
    if pa.types.is_timestamp(t):
        ns = col.cast(pa.timestamp("ns", t.tz)).cast(pa.int64()).fill_null(0)
        vals, kind = ns.to_numpy(zero_copy_only=False).astype(np.int64), "ns"
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        vals, kind = _numeric_times(col, unit_s, code), "num"
    else:
        return _times_slow(col.to_pylist(), unit_s, code)
    if null is not None:
        _mark(code, null, "missing timestamp")
    return vals, kind


def _numeric_times(col: pa.Array | pa.ChunkedArray, unit_s: float, code: np.ndarray) -> np.ndarray:
    """Numbers in ticks of unit_s seconds, not yet seconds: integers as int64 (epoch ns,
    ~1.7e18, past float64's 2**53, stay exact until the Builder subtracts the first arrival;
    a uint64 past int64 as float64), floats as float64; bad values marked."""
    ints = pa.types.is_integer(col.type)
    if ints and pa.types.is_uint64(col.type) and (pc.max(col).as_py() or 0) >= 2**63:
        ints, col = False, col.cast(pa.float64(), safe=False)
    if ints:
        vals = col.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        _mark(code, np.abs(vals.astype(np.float64)) > MAX_TIME_S / unit_s, TIME_TOO_LARGE)
        return vals.astype(np.int64, copy=False)
    f = col.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
    _mark(code, ~np.isfinite(f), "bad timestamp")
    _mark(code, np.abs(np.nan_to_num(f)) > MAX_TIME_S / unit_s, TIME_TOO_LARGE)
    return np.nan_to_num(f, posinf=0.0, neginf=0.0)


def _times_slow(values: list[object], unit_s: float, code: np.ndarray) -> tuple[np.ndarray, str]:
    parsed: list[tuple[int | None, int | float | None]] = []
    for i, v in enumerate(values):
        try:
            parsed.append(parse_time_value(v, unit_s))
        except BadValue as exc:
            _mark_one(code, i, str(exc))
            parsed.append((None, 0))
    kinds = [p[0] is not None for i, p in enumerate(parsed) if code[i] == 0]
    kind = "ns" if kinds and kinds[0] else "num"
    out: list[int | float] = [0] * len(values)
    for i, (ns, num) in enumerate(parsed):
        if code[i]:
            continue
        if (ns is not None) != (kind == "ns"):
            _mark_one(code, i, "mixed timestamp formats")
        else:
            out[i] = ns if ns is not None else cast(float, num)  # one of them is set
    return number_array(out), kind


def _mark(code: np.ndarray, mask: np.ndarray, reason: str) -> None:
    code[(code == 0) & mask] = _CODE[reason]


def _mark_one(code: np.ndarray, i: int, reason: str) -> None:
    if code[i] == 0:
        code[i] = _CODE.get(reason, _CODE["non-numeric length"])


def batch_columns(batch: pa.RecordBatch | pa.Table, cmap: ColumnMap, b: Builder) -> BatchCols:
    """Convert and validate one batch; bad rows get a nonzero code instead of raising."""
    code = np.zeros(batch.num_rows, dtype=np.int8)
    inp = _lengths(batch.column(cmap.input), code)
    out = _lengths(batch.column(cmap.output), code)
    times, kind = None, "none"
    if cmap.time:
        col, unit_s = batch.column(cmap.time), cmap.unit_s
        if pa.types.is_duration(col.type):  # offsets in the column's own unit, not time_unit
            b.notes["time_column_type"] = str(col.type)  # e.g. 'duration[ms]'
            col, unit_s = col.cast(pa.int64()), _DURATION_UNIT_S[col.type.unit]
        times, kind = _times(col, unit_s, code)
    cols = BatchCols(inp, out, times, kind, code, time_unit_s=unit_s if cmap.time else 1.0)
    if cmap.hashes:
        col = batch.column(cmap.hashes)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if not (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)):
            raise BadValue(f"column {cmap.hashes!r} is not a list of integers")
        cols.hash_counts = col.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
        flat = col.flatten()
        if not pa.types.is_integer(flat.type):
            raise BadValue(f"column {cmap.hashes!r} is not a list of integers")
        if flat.null_count:  # a null hash id makes the row bad (it was read as hash id 0)
            rows = pc.list_parent_indices(col).to_numpy(zero_copy_only=False)
            null_rows = np.zeros(len(code), dtype=bool)
            null_rows[rows[np.asarray(flat.is_null(), dtype=bool)]] = True
            _mark(code, null_rows, _BAD_HASHES)
        ids = flat.fill_null(0).to_numpy(zero_copy_only=False)  # uint64 stays uint64: Builder
        cols.hash_ids = ids if ids.dtype == np.uint64 else ids.astype(np.int64, copy=False)
    if cmap.session:
        cols.session = _sessions(batch.column(cmap.session), b)
    return cols


def _sessions(col: pa.Array | pa.ChunkedArray, b: Builder) -> np.ndarray:
    """Session ids as int64; a null (or, in a string column, an empty) id is no session: each
    such row gets a fresh id of its own (it read as -1 / one key, merging them all)."""
    if not pa.types.is_integer(col.type):
        return np.array([b.session_code(v) for v in col.to_pylist()], dtype=np.int64)
    ids = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    if col.null_count:
        null = np.asarray(col.is_null(), dtype=bool)
        ids[null] = b.no_sessions(int(col.null_count))
    return ids


def add_batch(
    cols: BatchCols, b: Builder, batch: pa.RecordBatch | pa.Table, cmap: ColumnMap
) -> None:
    """Append the good rows of a checked batch (callers decide what bad rows mean first)."""
    keep = cols.code == 0
    all_ok = bool(keep.all())
    hc = hid = None
    if cols.hash_counts is not None and cols.hash_ids is not None:
        hc = cols.hash_counts if all_ok else cols.hash_counts[keep]
        hid = cols.hash_ids if all_ok else cols.hash_ids[np.repeat(keep, cols.hash_counts)]
    pick = (lambda a: a) if all_ok else (lambda a: a[keep])
    b.add(
        pick(cols.inp),
        pick(cols.out),
        None if cols.times is None else pick(cols.times),
        cols.time_kind,
        hc,
        hid,
        None if cols.session is None else pick(cols.session),
        cols.time_unit_s,
    )
    for name in cmap.count_cols:
        col = batch.column(name)
        if not all_ok:
            col = pc.filter(col, pa.array(keep))
        counts = b.value_counts.setdefault(name.lower().replace(" ", "_"), _counter())
        for item in pc.value_counts(col).to_pylist():
            counts[str(item["values"])] += int(item["counts"])


def _counter() -> Counter[str]:
    from collections import Counter

    return Counter()
