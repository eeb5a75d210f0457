"""JSONL traces (Mooncake FAST'25 and generic), streamed line by line; Parquet via pyarrow."""

from __future__ import annotations

import io
import json
import zlib
from collections.abc import Iterator
from typing import IO

import numpy as np

from pdplan.errors import InputError
from pdplan.workload._arrow import add_batch, batch_columns
from pdplan.workload._build import Builder
from pdplan.workload._hashes import check_hash_range, hash_array
from pdplan.workload._jsonl_fast import BLOCK_BYTES, FastChunk, FastParser
from pdplan.workload.core import Workload
from pdplan.workload.files import broken_off
from pdplan.workload.formats import ColumnMap, open_binary
from pdplan.workload.values import BadValue, number_array, parse_length, parse_time_value

__all__ = ["read_jsonl", "read_parquet"]

_FLUSH_ROWS = 1 << 16
_PIECE = 1 << 20  # bytes per read1() call while filling a block
_MAX_MISSES = 2  # after this many blocks in a row that need the careful path, stop trying
_RETRY_EVERY = 8  # ... except every 8th block (a file may turn clean after a bad start)
_PARQUET_BATCH = 1 << 20  # rows per parquet record batch
_BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark (Windows editors write it at the file start)


class _Cols:
    """Row lists flushed into the Builder every _FLUSH_ROWS rows (bounded memory)."""

    def __init__(self, unit_s: float) -> None:
        self.unit_s = unit_s  # seconds per tick of numeric times
        self.big = False  # a hash id >= 2**63 (uint64) among self.hids
        self.inp: list[int] = []
        self.out: list[int] = []
        self.times: list[float | int] = []
        self.kind = "none"
        self.decided = False
        self.hcount: list[int] = []
        self.hids: list[int] = []
        self.sess: list[int] = []

    def flush(self, b: Builder, with_hashes: bool, with_sess: bool) -> None:
        b.add(
            np.array(self.inp, dtype=np.int64),
            np.array(self.out, dtype=np.int64),
            number_array(self.times) if self.kind != "none" else None,
            self.kind,
            np.array(self.hcount, dtype=np.int64) if with_hashes else None,
            hash_array(self.hids, self.big, b) if with_hashes else None,
            np.array(self.sess, dtype=np.int64) if with_sess else None,
            self.unit_s,
        )
        self.big = False
        for lst in (self.inp, self.out, self.times, self.hcount, self.hids, self.sess):
            lst.clear()


def read_jsonl(
    path: str, cmap: ColumnMap, fmt: str, skip_bad: bool, *, fast: bool = True
) -> Workload:
    """One JSON object per line; a bad line is named (or skipped and counted with skip_bad).

    The file is read in blocks of whole lines. A block goes through pyarrow.json (fast) when
    its guards pass; otherwise (bad or unusual lines) it is read line by line, so errors and
    --skip-bad counts are exactly those of the careful path. fast=False: careful path only.
    """
    b = Builder(path, fmt, skip_bad, cmap.block_tokens)
    st = _State(cmap, b)
    parser = FastParser(cmap) if fast else None
    misses = 0  # consecutive blocks the fast path could not take
    with open_binary(path) as f:
        try:
            for k, block in enumerate(_blocks(f)):
                if k == 0 and block.startswith(_BOM):
                    block = block[len(_BOM) :]  # a BOM is not part of line 1's JSON
                nlines = block.count(b"\n")
                chunk = None
                if parser is not None and (misses < _MAX_MISSES or misses % _RETRY_EVERY == 0):
                    chunk = parser.parse(block, nlines)
                if chunk is not None and st.take_fast(chunk, nlines):
                    misses = 0
                    continue
                misses += parser is not None
                st.careful(block)
        except (OSError, EOFError, zlib.error) as exc:  # the lines before it are read first
            raise broken_off(path, st.lineno, exc) from None
    st.flush()
    if st.blank:
        b.notes["blank_lines"] = st.blank
    b.notes["reader"] = "jsonl"
    b.notes["fast_rows"] = st.fast_rows
    return b.finish()


def _blocks(f: IO[bytes]) -> Iterator[bytes]:
    """Blocks of whole lines (about BLOCK_BYTES); the last one gets a final newline."""
    buf = bytearray()
    read = getattr(f, "read1", f.read)  # read1: a gzip cut mid-read keeps what came before it
    while True:
        try:
            piece = read(_PIECE)
        except (OSError, EOFError, zlib.error):
            cut = buf.rfind(b"\n") + 1
            if cut:  # lines before a corrupt gzip stream are read (and named) first
                yield bytes(buf[:cut])
            raise
        if not piece:
            break
        buf += piece
        if len(buf) >= BLOCK_BYTES:
            cut = buf.rfind(b"\n") + 1
            if cut:
                yield bytes(buf[:cut])
                del buf[:cut]
    if buf:
        yield bytes(buf) if buf.endswith(b"\n") else bytes(buf) + b"\n"


class _State:
    """What the careful path decides from the first good row, shared with fast blocks."""

    def __init__(self, cmap: ColumnMap, b: Builder) -> None:
        self.cmap = cmap
        self.b = b
        self.cols = _Cols(cmap.unit_s)
        # every row has them when the file names the column: a row without is no prefix /
        # no session (as an empty CSV cell or a Parquet null), not a bad row
        self.has_hashes = cmap.hashes is not None
        self.has_sess = cmap.session is not None
        self.lineno = 0
        self.blank = 0
        self.fast_rows = 0

    def flush(self) -> None:
        self.cols.flush(self.b, bool(self.has_hashes), bool(self.has_sess))

    def take_fast(self, c: FastChunk, nlines: int) -> bool:
        """Append a fast block if it agrees with the decisions so far (else: careful)."""
        kind = "none" if c.times is None else "num"
        hashes, sess = c.hash_counts is not None, c.session is not None
        if self.cols.decided and kind != self.cols.kind:
            return False
        if (hashes, sess) != (self.has_hashes, self.has_sess):
            return False
        self.flush()  # careful rows read before this block go first
        self.cols.kind, self.cols.decided = kind, True
        self.has_hashes, self.has_sess = hashes, sess
        unit_s = self.cmap.unit_s
        self.b.add(c.inp, c.out, c.times, kind, c.hash_counts, c.hash_ids, c.session, unit_s)
        self.lineno += nlines
        self.fast_rows += len(c.inp)
        return True

    def careful(self, block: bytes) -> None:
        """Line by line, as the text reader splits lines (\\n, \\r\\n or a lone \\r)."""
        text = block.decode("utf-8", errors="replace")
        for line in io.StringIO(text, newline=""):
            self.lineno += 1
            if not line.strip():
                self.blank += 1
                continue
            self._line(line)
            if len(self.cols.inp) >= _FLUSH_ROWS:
                self.flush()

    def _line(self, line: str) -> None:
        cmap, cols, b = self.cmap, self.cols, self.b
        try:
            rec = _record(line, cmap)
            t, hashes, sess = _extras(rec, cmap, cols, b)
            i, o = parse_length(rec.get(cmap.input)), parse_length(rec.get(cmap.output))
        except BadValue as exc:
            b.bad(self.lineno, str(exc))
            return
        cols.inp.append(i)
        cols.out.append(o)
        if t is not None:
            cols.times.append(t)
        if hashes is not None:
            cols.hcount.append(len(hashes))
            cols.hids.extend(hashes)
            cols.big = cols.big or (bool(hashes) and max(hashes) >= 2**63)
        if sess is not None:
            cols.sess.append(sess)


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
    t, kind = _time(rec, cmap)
    if not cols.decided:
        cols.kind, cols.decided = kind, True
    if kind != cols.kind:
        raise BadValue("mixed timestamp formats")
    hashes: object  # a list of ints once checked
    hashes = None
    if cmap.hashes:
        raw_h = rec.get(cmap.hashes)
        hashes = [] if raw_h is None else raw_h  # no hash_ids: no prefix blocks (as in CSV)
        if not isinstance(hashes, list) or any(type(h) is not int for h in hashes):
            raise BadValue("hash_ids must be a list of integers")
        check_hash_range(hashes)
    sess = None
    if cmap.session:
        raw_s = rec.get(cmap.session)
        if isinstance(raw_s, (dict, list)):
            raise BadValue("session id must be a number or a string")
        raw_s = raw_s if raw_s is None or isinstance(raw_s, int) else str(raw_s)
        sess = b.session_code(raw_s)  # None / '': no session, an id of its own
    return t, hashes, sess


def _time(rec: dict[str, object], cmap: ColumnMap) -> tuple[float | int | None, str]:
    """(time, kind): the file's time column is in every row, as in CSV and Parquet: a row
    without it (or null) is 'missing timestamp' at its own line. Decided by line 1, a line 1
    without it made every later line 'timestamp present in some rows only'."""
    if not cmap.time:
        return None, "none"
    ns, num = parse_time_value(rec.get(cmap.time), cmap.unit_s)  # None: 'missing timestamp'
    return (ns, "ns") if ns is not None else (num, "num")


def read_parquet(path: str, cmap: ColumnMap, fmt: str, skip_bad: bool) -> Workload:
    """Parquet in record batches; a bad row is named by its 1-based row number.

    Hash ids are opaque 64-bit values: a list<uint64> column (ids >= 2**63 included) is kept
    bit for bit as int64 (equal ids stay equal), meta['hash_ids_type'] = 'uint64', and the
    writers write the unsigned values back (JSONL / CSV ids >= 2**63 are read the same way).
    Integer times stay int64 in their time_unit until the first arrival is subtracted."""
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
