"""write_workload: JSONL in Mooncake FAST'25 layout, CSV or Parquet, by the file's extension."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import numpy as np
import pyarrow as pa

from pdplan.errors import InputError
from pdplan.workload.core import NO_SESSION, STRING_SESSIONS, Workload

__all__ = ["output_format", "write_workload"]

_CHUNK = 1 << 16  # rows formatted per write
# extension -> format written; JSONL and CSV may end in .gz (gzip'd), Parquet compresses itself
_EXTENSIONS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_GZ_OK = ("jsonl", "csv")


def output_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format write_workload writes to `path`: `fmt`, else from the extension (.jsonl,
    .csv, .parquet / .pq; .jsonl.gz and .csv.gz gzip'd). Any other extension is refused,
    so a trace is never written as JSONL under a name that says otherwise."""
    if fmt:
        if fmt not in ("jsonl", "csv", "parquet"):
            raise InputError(f"cannot write format {fmt!r}: jsonl, csv or parquet")
        return fmt
    spath = os.fspath(path)
    gz = spath.lower().endswith(".gz")
    ext = os.path.splitext(spath[:-3] if gz else spath)[1].lower()
    kind = _EXTENSIONS.get(ext)
    if kind is None or (gz and kind not in _GZ_OK):
        got = f"'{ext}{'.gz' if gz else ''}' is not a trace format pdplan writes"
        raise InputError(
            f"{got if ext or gz else 'no file extension'}: name it .jsonl, .csv or .parquet "
            "(.jsonl.gz / .csv.gz to compress)",
            path=spath,
        )
    return kind


def _hash_ids(w: Workload) -> np.ndarray:
    """Hash ids as they were read: int64, or uint64 (meta['hash_ids_type']; readers keep a
    uint64 id's 64 bits as int64), so an id >= 2**63 is written back unsigned, not negative."""
    assert w.hash_ids is not None
    return w.hash_ids.view(np.uint64) if w.meta.get("hash_ids_type") == "uint64" else w.hash_ids


def _ms(w: Workload) -> np.ndarray | None:
    """Arrival in ms (Mooncake unit), rounded to 1 us."""
    return None if w.arrival_s is None else np.round(w.arrival_s * 1000.0, 3)


@contextmanager
def _open(path: str, to: str) -> Iterator[IO[bytes]]:
    """`to` open for writing, gzip'd when `path` (the name the file ends up with) ends in .gz;
    the gzip header names `path`, as gzip.open(path) writes it, whatever `to` is called, and
    holds mtime 0, not the clock: the same trace (synth, same seed) gives the same bytes."""
    with open(to, "wb") as raw:
        if path.lower().endswith(".gz"):
            with gzip.GzipFile(filename=path, mode="wb", fileobj=raw, mtime=0) as gz:
                yield gz  # type: ignore[misc]
        else:
            yield raw


def _write_jsonl(w: Workload, f: IO[bytes]) -> None:
    ms = _ms(w)
    ints = ms is not None and bool(np.all(ms == np.floor(ms)))
    ids = _hash_ids(w) if w.has_hashes else None
    for a in range(0, len(w), _CHUNK):
        b = min(a + _CHUNK, len(w))
        lines = []
        ts = None if ms is None else (ms[a:b].astype(np.int64) if ints else ms[a:b]).tolist()
        sess = None if w.session_id is None else _session_json(w, a, b)
        pairs = zip(w.input_len[a:b].tolist(), w.output_len[a:b].tolist(), strict=True)
        for j, (i, o) in enumerate(pairs):
            parts = [] if ts is None else [f'"timestamp": {ts[j]!r}']
            parts += [f'"input_length": {i}', f'"output_length": {o}']
            if ids is not None and w.hash_offsets is not None:
                lo, hi = w.hash_offsets[a + j], w.hash_offsets[a + j + 1]
                parts.append(f'"hash_ids": [{", ".join(map(str, ids[lo:hi].tolist()))}]')
            if sess is not None:
                parts.append(f'"session_id": {sess[j]}')
            lines.append("{" + ", ".join(parts) + "}\n")
        f.write("".join(lines).encode())


def _table(w: Workload, hashes_as_text: bool) -> pa.Table:
    cols: dict[str, pa.Array] = {}
    ms = _ms(w)
    if ms is not None:
        cols["timestamp"] = pa.array(ms)
    cols["input_length"] = pa.array(w.input_len)
    cols["output_length"] = pa.array(w.output_len)
    if w.hash_offsets is not None and w.hash_ids is not None:
        lists = pa.LargeListArray.from_arrays(pa.array(w.hash_offsets), pa.array(_hash_ids(w)))
        if hashes_as_text:
            lists = pa.array([" ".join(map(str, x)) for x in lists.to_pylist()])
        cols["hash_ids"] = lists
    if w.session_id is not None:
        cols["session_id"] = _session_array(w)
    return pa.table(cols)


def _session_values(w: Workload, a: int, b: int) -> list[object]:
    """Session ids of rows a..b as the trace gave them: integers as read, string keys by
    their own text (meta['session_labels'], coded downward from STRING_SESSIONS), and None
    for a row that had none (ids <= NO_SESSION), so it reads back as a session of its own."""
    assert w.session_id is not None
    ids = w.session_id[a:b].tolist()
    labels = w.meta.get("session_labels")
    names = labels if isinstance(labels, list) else []
    for j, v in enumerate(ids):
        if v <= NO_SESSION:
            ids[j] = None
        elif v <= STRING_SESSIONS and STRING_SESSIONS - v < len(names):
            ids[j] = names[STRING_SESSIONS - v]
    return ids


def _session_json(w: Workload, a: int, b: int) -> list[str]:
    """JSON text of each row's session id (null for none); labels keep their JSON type."""
    return [json.dumps(v, default=str) for v in _session_values(w, a, b)]


def _session_array(w: Workload) -> pa.Array:
    """The session column: int64 with nulls, or text when the trace keyed sessions by
    strings (one column holds one type)."""
    assert w.session_id is not None
    if not w.meta.get("session_labels"):
        ids = w.session_id
        return pa.array(ids, mask=ids <= NO_SESSION)
    vals = _session_values(w, 0, len(w))
    return pa.array([None if v is None else str(v) for v in vals], type=pa.string())


def write_workload(
    w: Workload,
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    to: str | os.PathLike[str] | None = None,
) -> str:
    """Write w; the format comes from fmt or the extension (see output_format; a trailing
    .gz compresses CSV / JSONL). Times are written in ms from the first arrival,
    with Mooncake column names, so every written file reads back with read_workload.
    `to`, when given, is the file actually written (a temporary name the caller renames to
    `path` once complete); the format, compression and error messages still follow `path`."""
    spath = os.fspath(path)
    kind = output_format(spath, fmt)
    dest = spath if to is None else os.fspath(to)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(_table(w, hashes_as_text=False), dest)
        elif kind == "csv":
            import pyarrow.csv as pacsv

            with _open(spath, dest) as f:
                pacsv.write_csv(_table(w, hashes_as_text=True), f)
        else:
            with _open(spath, dest) as f:
                _write_jsonl(w, f)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=spath) from None
    return kind
