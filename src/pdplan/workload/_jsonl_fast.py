"""JSONL fast path: pyarrow.json on a block of whole lines, guarded to agree with json.loads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from pdplan.workload.formats import ColumnMap
from pdplan.workload.values import INT32_MAX, MAX_TIME_S

__all__ = ["BLOCK_BYTES", "FastChunk", "FastParser"]

# Bytes per parsed block. pyarrow.json single-thread throughput on Mooncake-style lines measured
# 75 MB/s at 1 MiB, 116 MB/s at 16 MiB, 65 MB/s at 64 MiB blocks (this machine, pyarrow 16):
# 16 MiB is the sweet spot and keeps peak memory at a few blocks.
BLOCK_BYTES = 16 << 20


@dataclass
class FastChunk:
    """One block's rows as numpy columns (every row good, in file order)."""

    inp: np.ndarray
    out: np.ndarray
    times: np.ndarray | None  # numbers in cmap.time_unit ("num" kind), None without a time column
    hash_counts: np.ndarray | None
    hash_ids: np.ndarray | None
    session: np.ndarray | None


class FastParser:
    """Parses blocks of a file whose mapped columns are numbers (and a list of ints).

    parse() returns None whenever the block might not read exactly as the careful
    line-by-line path would read it; the caller then re-reads that block carefully.
    """

    def __init__(self, cmap: ColumnMap) -> None:
        self.cmap = cmap
        fields = [(cmap.input, pa.int64()), (cmap.output, pa.int64())]
        if cmap.time:  # int64 for ns: epoch ns (1.7e18) is past float64's 2**53 exact integers
            fields.append((cmap.time, pa.int64() if cmap.time_unit == "ns" else pa.float64()))
        if cmap.hashes:
            fields.append((cmap.hashes, pa.list_(pa.int64())))
        if cmap.session:
            fields.append((cmap.session, pa.int64()))
        names = [name for name, _ in fields]
        self.ok = len(set(names)) == len(names)  # a column mapped twice: careful path only
        self.parse_opts = pj.ParseOptions(
            explicit_schema=pa.schema(fields) if self.ok else None,
            unexpected_field_behavior="ignore",
        )

    def parse(self, block: bytes, nlines: int) -> FastChunk | None:
        """Rows of a block of `nlines` newline-terminated lines, or None (use the careful path)."""
        if not self.ok or nlines == 0 or not self._shape_ok(block, nlines):
            return None
        read_opts = pj.ReadOptions(use_threads=True, block_size=max(len(block), 1 << 20))
        try:
            table = pj.read_json(
                pa.BufferReader(block), read_options=read_opts, parse_options=self.parse_opts
            )
        except (pa.ArrowException, ValueError, OSError):
            return None
        if table.num_rows != nlines:
            return None
        return self._columns(table)

    def _shape_ok(self, block: bytes, nlines: int) -> bool:
        """Byte-count guards for what pyarrow accepts but json.loads line by line does not."""
        # Every line starts with '{' and holds no other '{': one flat object per line, so no
        # blank lines (pyarrow skips them), no two objects on a line (pyarrow reads both), no
        # BOM, no nesting deeper than json.loads' recursion limit (pyarrow has none).
        if not block.startswith(b"{") or block.count(b"{") != nlines:
            return False
        if block.count(b"\n{") != nlines - 1:
            return False
        # Lists: exactly one per line (the hash ids, non-null on every row, checked later).
        if block.count(b"[") != (nlines if self.cmap.hashes else 0):
            return False
        # A lone CR ends a line for the careful reader (universal newlines), not for pyarrow.
        cr = block.count(b"\r")
        return cr == 0 or cr == block.count(b"\r\n")

    def _columns(self, table: pa.Table) -> FastChunk | None:
        cmap = self.cmap
        inp = _lengths(table.column(cmap.input))
        out = _lengths(table.column(cmap.output))
        if inp is None or out is None:
            return None
        times = hcount = hids = session = None
        if cmap.time:
            col = table.column(cmap.time)
            if col.null_count:
                return None
            # numbers in cmap.time_unit; the Builder subtracts the first and scales to seconds
            times = col.to_numpy()
            if not bool(np.all(np.abs(times) <= MAX_TIME_S / cmap.unit_s)):  # and NaN / inf
                return None
        if cmap.hashes:
            col = table.column(cmap.hashes).combine_chunks()
            if col.null_count:
                return None
            flat = col.flatten()
            if flat.null_count:
                return None
            hcount = col.value_lengths().to_numpy().astype(np.int64)
            hids = flat.to_numpy().astype(np.int64, copy=False)
        if cmap.session:
            col = table.column(cmap.session)
            if col.null_count:
                return None
            session = col.to_numpy().astype(np.int64, copy=False)
        return FastChunk(inp, out, times, hcount, hids, session)


def _lengths(col: pa.ChunkedArray) -> np.ndarray | None:
    """int64 token counts in [0, INT32_MAX] with no nulls, else None."""
    if col.null_count:
        return None
    vals = col.to_numpy().astype(np.int64, copy=False)
    if len(vals) and (int(vals.min()) < 0 or int(vals.max()) > INT32_MAX):
        return None
    return vals
