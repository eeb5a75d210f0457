"""JSONL traces (Mooncake FAST'25 and generic), streamed line by line; Parquet via pyarrow."""

from __future__ import annotations

import json

import numpy as np

from pdplan.errors import InputError
from pdplan.workload._arrow import add_batch, batch_columns
from pdplan.workload._build import Builder
from pdplan.workload.core import Workload
from pdplan.workload.formats import ColumnMap, open_text
from pdplan.workload.values import BadValue, parse_length, parse_time_ns

__all__ = ["read_jsonl", "read_parquet"]

_FLUSH_ROWS = 1 << 16
_PARQUET_BATCH = 1 << 20  # rows per parquet record batch


class _Cols:
    """Row lists flushed into the Builder every _FLUSH_ROWS rows (bounded memory)."""

    def __init__(self) -> None:
        self.inp: list[int] = []
        self.out: list[int] = []
        self.times: list[float | int] = []
        self.kind = "none"
        self.decided = False
        self.hcount: list[int] = []
        self.hids: list[int] = []
        self.sess: list[int] = []

    def flush(self, b: Builder, with_hashes: bool, with_sess: bool) -> None:
        tdtype = np.int64 if self.kind == "ns" else np.float64
        b.add(
            np.array(self.inp, dtype=np.int64),
            np.array(self.out, dtype=np.int64),
            np.array(self.times, dtype=tdtype) if self.kind != "none" else None,
            self.kind,
            np.array(self.hcount, dtype=np.int64) if with_hashes else None,
            np.array(self.hids, dtype=np.int64) if with_hashes else None,
            np.array(self.sess, dtype=np.int64) if with_sess else None,
        )
        for lst in (self.inp, self.out, self.times, self.hcount, self.hids, self.sess):
            lst.clear()


def read_jsonl(path: str, cmap: ColumnMap, fmt: str, skip_bad: bool) -> Workload:
    """One JSON object per line; a bad line is named (or skipped and counted with skip_bad)."""
    b = Builder(path, fmt, skip_bad, cmap.block_tokens)
    cols = _Cols()
    blank = 0
    has_hashes = has_sess = None  # decided by the first good record
    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                blank += 1
                continue
            try:
                rec = _record(line, cmap)
                t, hashes, sess = _extras(rec, cmap, cols, b)
                i, o = parse_length(rec.get(cmap.input)), parse_length(rec.get(cmap.output))
                if has_hashes is None:
                    has_hashes, has_sess = hashes is not None, sess is not None
                if (hashes is not None) != has_hashes or (sess is not None) != has_sess:
                    raise BadValue("hash_ids or session present in some rows only")
            except BadValue as exc:
                b.bad(lineno, str(exc))
                continue
            cols.inp.append(i)
            cols.out.append(o)
            if t is not None:
                cols.times.append(t)
            if hashes is not None:
                cols.hcount.append(len(hashes))
                cols.hids.extend(hashes)
            if sess is not None:
                cols.sess.append(sess)
            if len(cols.inp) >= _FLUSH_ROWS:
                cols.flush(b, bool(has_hashes), bool(has_sess))
    cols.flush(b, bool(has_hashes), bool(has_sess))
    if blank:
        b.notes["blank_lines"] = blank
    b.notes["reader"] = "jsonl"
    return b.finish()


def _record(line: str, cmap: ColumnMap) -> dict[str, object]:
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        raise BadValue("not valid JSON") from None
    if not isinstance(rec, dict):
        raise BadValue("not a JSON object")
    for key in (cmap.input, cmap.output):
        if key not in rec:
            raise BadValue(f"no {key!r} field")
    return rec


def _extras(
    rec: dict[str, object], cmap: ColumnMap, cols: _Cols, b: Builder
) -> tuple[float | int | None, list[int] | None, int | None]:
    """Timestamp, hash ids and session of one record (time kind fixed by the first row)."""
    t: float | int | None = None
    raw_t = rec.get(cmap.time) if cmap.time else None
    kind = "none"
    if raw_t is not None:
        ns, sec = parse_time_ns(raw_t, cmap.unit_s)
        kind = "ns" if ns is not None else "s"
        t = ns if ns is not None else sec
    if not cols.decided:
        cols.kind, cols.decided = kind, True
    if kind != cols.kind:
        if kind == "none":
            raise BadValue("missing timestamp")
        if cols.kind == "none":
            raise BadValue("timestamp present in some rows only")
        raise BadValue("mixed timestamp formats")
    hashes = None
    raw_h = rec.get(cmap.hashes) if cmap.hashes else None
    if raw_h is not None:
        if not isinstance(raw_h, list) or any(type(h) is not int for h in raw_h):
            raise BadValue("hash_ids must be a list of integers")
        if any(not -(2**63) <= h < 2**63 for h in raw_h):
            raise BadValue("hash id out of int64 range")
        hashes = raw_h
    sess = None
    raw_s = rec.get(cmap.session) if cmap.session else None
    if raw_s is not None:
        if isinstance(raw_s, (dict, list)):
            raise BadValue("session id must be a number or a string")
        sess = b.session_code(raw_s if isinstance(raw_s, int) else str(raw_s))
    return t, hashes, sess


def read_parquet(path: str, cmap: ColumnMap, fmt: str, skip_bad: bool) -> Workload:
    """Parquet in record batches; a bad row is named by its 1-based row number."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    b = Builder(path, fmt, skip_bad, cmap.block_tokens)
    wanted = [cmap.input, cmap.output, cmap.time, cmap.hashes, cmap.session, *cmap.count_cols]
    row0 = 0
    try:
        pf = pq.ParquetFile(path)
        for batch in pf.iter_batches(
            _PARQUET_BATCH, columns=list(dict.fromkeys(filter(None, wanted)))
        ):
            cols = batch_columns(batch, cmap, b)
            for r in np.flatnonzero(cols.code):
                b.bad(row0 + int(r) + 1, _reason(int(cols.code[r])))
            add_batch(cols, b, batch, cmap)
            row0 += batch.num_rows
    except BadValue as exc:
        raise InputError(str(exc), path=path) from None
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"unreadable Parquet: {exc}", path=path, line=row0 + 1) from None
    b.notes["reader"] = "parquet"
    b.notes["line_numbers_are"] = "rows"
    return b.finish()


def _reason(code: int) -> str:
    from pdplan.workload._arrow import REASONS

    return REASONS[code]
