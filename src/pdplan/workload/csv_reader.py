"""CSV traces: a streaming pyarrow fast path, and a careful line-by-line pass for bad files."""

from __future__ import annotations

import csv
import sys
import zlib
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from pdplan.errors import InputError
from pdplan.workload._arrow import REASONS, add_batch, batch_columns
from pdplan.workload._build import Builder
from pdplan.workload._hashes import check_hash_range, hash_array
from pdplan.workload.core import Workload
from pdplan.workload.files import broken_off, holds_hex_field
from pdplan.workload.formats import ColumnMap, is_gzip, open_text
from pdplan.workload.values import BadValue, number_array, parse_length, parse_time_value

if TYPE_CHECKING:
    from _csv import Reader

__all__ = ["BLOCK_BYTES", "read_csv"]

BLOCK_BYTES = 4 << 20  # 4 MiB arrow read blocks: cache-friendly, ~1.5x faster than 16 MiB
_FLUSH_ROWS = 1 << 16
_EMPTY_ROW = "empty row (every field empty)"


class _Fallback(Exception):
    """The fast path met something it cannot name precisely; redo the file carefully."""


def read_csv(path: str, cmap: ColumnMap, fmt: str, skip_bad: bool) -> Workload:
    """Read a CSV (optionally gzip'd) trace; the fast path first, the careful pass on trouble."""
    b = Builder(path, fmt, skip_bad, cmap.block_tokens)
    try:
        _arrow_pass(path, cmap, b)
        b.notes["reader"] = "arrow"
        return b.finish()
    except _Fallback:
        pass
    b = Builder(path, fmt, skip_bad, cmap.block_tokens)
    _careful_pass(path, cmap, b)
    b.notes["reader"] = "careful"
    return b.finish()


def _wanted(cmap: ColumnMap) -> list[str]:
    cols = [cmap.input, cmap.output, cmap.time, cmap.session, *cmap.count_cols]
    return list(dict.fromkeys(c for c in cols if c))


def _arrow_pass(path: str, cmap: ColumnMap, b: Builder) -> None:
    if cmap.hashes:
        raise _Fallback  # list columns in CSV: parsed by the careful pass
    # int64: a non-integer length ('1.0', '1e3') fails the batch, which the careful pass
    # then reads; Arrow's integer parser also takes hex ('0x10' as 16 tokens), which parse_length
    # refuses, so a file that may hold one goes to the careful pass, which names its line;
    # float64 here would refuse it too but read 10M rows 16 % slower with 170 MB more peak
    # memory (benchmarks/bench_workload_read.py)
    if holds_hex_field(path):
        raise _Fallback
    types = {cmap.input: pa.int64(), cmap.output: pa.int64()}
    if cmap.time:
        ttype = _time_type(path, cmap)
        if ttype is not None:
            types[cmap.time] = ttype  # explicit type: no inference, ~1.4x faster parsing
    convert = pacsv.ConvertOptions(
        include_columns=_wanted(cmap),
        column_types=types,
        strings_can_be_null=False,
    )
    read = pacsv.ReadOptions(block_size=BLOCK_BYTES)
    try:
        stream = pa.input_stream(path, compression="gzip" if is_gzip(path) else None)
        with pacsv.open_csv(stream, read_options=read, convert_options=convert) as reader:
            for batch in reader:
                cols = batch_columns(batch, cmap, b)
                if cols.code.any():
                    raise _Fallback
                add_batch(cols, b, batch, cmap)
    except (pa.ArrowException, BadValue, OSError, EOFError, ValueError) as exc:
        raise _Fallback from exc


def _time_type(path: str, cmap: ColumnMap) -> pa.DataType | None:
    """Arrow type for the time column, from the first data row: numeric -> float64 (whole
    numbers up to 2**53 exact: epoch ms / us), an integer in ns -> int64 (epoch ns, 1.7e18, is
    past 2**53; a later fraction sends the file to the careful pass), ISO datetime ->
    timestamp[ns] (tz UTC when it carries an offset); None -> let Arrow infer."""
    column = str(cmap.time)
    try:
        with open_text(path) as f:
            reader = csv.reader(f)
            header = [c.strip().lstrip("\ufeff") for c in next(reader)]
            row = next(reader)
        value = row[header.index(column)].strip()
    except (StopIteration, ValueError, IndexError, csv.Error, OSError, EOFError):
        return None
    try:
        ns, num = parse_time_value(value, 1.0)
    except BadValue:
        return None
    if ns is None:
        return pa.int64() if cmap.time_unit == "ns" and isinstance(num, int) else pa.float64()
    return pa.timestamp("ns", tz="UTC") if _has_offset(value) else pa.timestamp("ns")


def _has_offset(value: str) -> bool:
    tail = value[10:]
    return tail.endswith("Z") or "+" in tail or tail.count("-") > 0


class _Rows:
    """Row accumulator for the careful pass, flushed into the Builder in chunks."""

    def __init__(self, b: Builder, unit_s: float) -> None:
        self.b = b
        self.unit_s = unit_s
        self.inp: list[int] = []
        self.out: list[int] = []
        self.times: list[float | int] = []
        self.sess: list[int] = []
        self.hcount: list[int] = []
        self.hids: list[int] = []
        self.kind = "none"
        self.big = False  # a hash id >= 2**63 (uint64) among self.hids

    def flush(self) -> None:
        times = number_array(self.times) if self.times else None
        hc = np.array(self.hcount, dtype=np.int64) if self.hcount else None
        self.b.add(
            np.array(self.inp, dtype=np.int64),
            np.array(self.out, dtype=np.int64),
            times,
            self.kind,
            hc,
            hash_array(self.hids, self.big, self.b) if hc is not None else None,
            np.array(self.sess, dtype=np.int64) if self.sess else None,
            self.unit_s,
        )
        self.big = False
        for lst in (self.inp, self.out, self.times, self.sess, self.hcount, self.hids):
            lst.clear()


def _careful_pass(path: str, cmap: ColumnMap, b: Builder) -> None:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    rows = _Rows(b, cmap.unit_s)
    blank = 0
    counts: dict[str, Counter[str]] = {c: Counter() for c in cmap.count_cols}
    with open_text(path) as f:
        reader = csv.reader(f)
        header = _header(reader, path)
        idx = {name: i for i, name in enumerate(header)}
        missing = [c for c in (cmap.input, cmap.output) if c not in idx]
        if missing:
            raise InputError(f"missing column(s) {missing}; header is {header[:20]}", path=path)
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except (OSError, EOFError, zlib.error) as exc:  # a gzip cut mid-stream
                raise broken_off(path, reader.line_num, exc) from None
            except csv.Error as exc:
                b.bad(reader.line_num, f"unparseable CSV line ({exc})")
                continue
            if not any(cell.strip() for cell in row):
                if len(row) <= 1:  # an empty (or all-blank) line: no fields at all
                    blank += 1
                else:  # ',,': a row whose every field is empty is a malformed row
                    b.bad(reader.line_num, _EMPTY_ROW)
                continue
            if len(row) != len(header):
                b.bad(reader.line_num, f"expected {len(header)} fields, got {len(row)}")
                continue
            if _row(row, idx, cmap, rows, b, reader.line_num):
                for c in cmap.count_cols:
                    counts[c][row[idx[c]]] += 1
            if len(rows.inp) >= _FLUSH_ROWS:
                rows.flush()
    rows.flush()
    if blank:
        b.notes["blank_lines"] = blank
    for c, cnt in counts.items():
        b.value_counts[c.lower().replace(" ", "_")] = cnt


def _header(reader: Reader, path: str) -> list[str]:
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                return [cell.strip().lstrip("\ufeff") for cell in row]
    except csv.Error as exc:
        raise InputError(
            f"unreadable CSV header ({exc})", path=path, line=reader.line_num
        ) from None
    raise InputError("empty file (no header)", path=path)


def _row(
    row: list[str], idx: dict[str, int], cmap: ColumnMap, rows: _Rows, b: Builder, line: int
) -> bool:
    """Parse one data row into `rows`; False (and counted/raised) when it is bad."""
    try:
        i = parse_length(row[idx[cmap.input]])
        o = parse_length(row[idx[cmap.output]])
        t: float | int | None = None
        if cmap.time:
            ns, num = parse_time_value(row[idx[cmap.time]], cmap.unit_s)
            kind = "ns" if ns is not None else "num"
            if rows.kind == "none":
                rows.kind = kind
            if kind != rows.kind:
                raise BadValue(REASONS[8])  # mixed timestamp formats
            t = ns if ns is not None else num
        hashes = _hashes(row[idx[cmap.hashes]]) if cmap.hashes else None
        sess = _session(row[idx[cmap.session]], b) if cmap.session else None
    except BadValue as exc:
        b.bad(line, str(exc))
        return False
    rows.inp.append(i)
    rows.out.append(o)
    if t is not None:
        rows.times.append(t)
    if hashes is not None:
        rows.hcount.append(len(hashes))
        rows.hids.extend(hashes)
        rows.big = rows.big or (bool(hashes) and max(hashes) >= 2**63)
    if sess is not None:
        rows.sess.append(sess)
    return True


def _hashes(cell: str) -> list[int]:
    """'[1, 2, 3]' or '1 2 3' -> [1, 2, 3] (hash ids inside a CSV cell)."""
    text = cell.strip().strip("[]")
    try:
        vals = [int(x) for x in text.replace(",", " ").split()]
    except ValueError:
        raise BadValue("hash_ids must be a list of integers") from None
    check_hash_range(vals)
    return vals


def _session(cell: str, b: Builder) -> int:
    """An integer id as it is, other text coded; an empty cell is no session (its own)."""
    text = cell.strip()
    try:
        return b.session_code(int(text))
    except ValueError:
        return b.session_code(text)  # '' -> a fresh id
