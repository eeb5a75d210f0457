"""Reader back end: collects column chunks, counts bad rows, and assembles a Workload."""

from __future__ import annotations

from collections import Counter

import numpy as np

from pdplan.errors import InputError
from pdplan.workload.core import NO_SESSION, STRING_SESSIONS, Workload
from pdplan.workload.formats import PRESETS
from pdplan.workload.values import TIME_UNITS

__all__ = ["Builder"]

_MAX_EXAMPLES = 5
_UNIT_NAMES = {u: name for name, u in TIME_UNITS.items()}  # 1e-3 -> 'ms'
_NO_SESSION = NO_SESSION  # first id given to a row without a session id (Builder.no_sessions)


class Builder:
    """Append-only column store for one file; `bad()` raises or counts (with --skip-bad)."""

    def __init__(self, path: str, fmt: str, skip_bad: bool, block_tokens: int = 512) -> None:
        self.path = path
        self.fmt = fmt
        self.skip_bad = skip_bad
        self.block_tokens = block_tokens
        self.skipped: Counter[str] = Counter()
        self.examples: list[str] = []
        self.notes: dict[str, object] = {}
        self.value_counts: dict[str, Counter[str]] = {}
        self._inp: list[np.ndarray] = []
        self._out: list[np.ndarray] = []
        self._times: list[np.ndarray] = []
        self._time_kind: str | None = None  # "ns" (datetime), "num" (numeric) or "none"
        self._units: list[float] = []  # seconds per tick of each "num" chunk
        self._hcount: list[np.ndarray] = []
        self._hids: list[np.ndarray] = []
        self._sess: list[np.ndarray] = []
        self._sess_codes: dict[object, int] = {}
        self._fresh = 0  # session ids handed out by no_sessions()
        self.sessionless = 0  # good rows that carried no session id
        self.hash_negative = False  # a signed hash id < 0 was read
        self.hash_unsigned = False  # a uint64 column or an id >= 2**63 was read
        self.rows = 0

    # -- bad rows -------------------------------------------------------------------------
    def bad(self, line: int, reason: str) -> None:
        """A bad row: raise InputError naming file:line, or count it when skipping."""
        if not self.skip_bad:
            raise InputError(
                f"{reason} (use --skip-bad to skip such rows)", path=self.path, line=line
            )
        self.skipped[reason] += 1
        if len(self.examples) < _MAX_EXAMPLES:
            self.examples.append(f"line {line}: {reason}")

    def session_code(self, value: object) -> int:
        """int64 session id: integers as they are, other keys (strings) coded downward from
        STRING_SESSIONS (-2**61, where no real trace's integer ids lie; the keys are kept in
        meta['session_labels'] for the writers); no id (None, an empty or blank string) is
        no session: a fresh id of its own."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return int(self.no_sessions(1)[0])
        if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
            return value
        return self._sess_codes.setdefault(value, STRING_SESSIONS - len(self._sess_codes))

    def no_sessions(self, n: int) -> np.ndarray:
        """n fresh session ids for rows without one (each request its own session), drawn
        downward from _NO_SESSION so they meet neither string codes nor each other."""
        first = _NO_SESSION - self._fresh
        self._fresh += n
        return np.arange(first, first - n, -1, dtype=np.int64)

    # -- appending ------------------------------------------------------------------------
    def add(
        self,
        inp: np.ndarray,
        out: np.ndarray,
        times: np.ndarray | None = None,
        time_kind: str = "none",
        hash_counts: np.ndarray | None = None,
        hash_ids: np.ndarray | None = None,
        session: np.ndarray | None = None,
        time_unit_s: float = 1.0,
    ) -> None:
        """Append one chunk; time_kind is 'ns' (int64 epoch ns, datetimes), 'num' (numbers in
        ticks of time_unit_s seconds: int64 kept exact until finish() subtracts the first
        arrival, or float64) or 'none'. hash_ids: int64, or uint64 (opaque 64-bit ids, kept
        bit for bit as int64; meta['hash_ids_type'] = 'uint64' has the writers write them
        back unsigned)."""
        if len(inp) == 0:
            return
        kind = time_kind if times is not None else "none"
        if self._time_kind is None:
            self._time_kind = kind
        elif kind != self._time_kind:
            raise InputError(
                f"timestamps change kind mid-file ({self._time_kind} then {kind})", path=self.path
            )
        self._inp.append(np.asarray(inp, dtype=np.int32))
        self._out.append(np.asarray(out, dtype=np.int32))
        if times is not None:
            self._times.append(times)
            self._units.append(time_unit_s)
        if hash_counts is not None and hash_ids is not None:
            self._hcount.append(np.asarray(hash_counts, dtype=np.int64))
            self._hids.append(self._signed_ids(np.asarray(hash_ids)))
        if session is not None:
            sess = np.asarray(session, dtype=np.int64)
            self._sess.append(sess)
            low = _NO_SESSION - self._fresh
            self.sessionless += int(np.count_nonzero((sess <= _NO_SESSION) & (sess > low)))
        self.rows += len(inp)

    # -- result ---------------------------------------------------------------------------
    def finish(self) -> Workload:
        """Concatenate, convert times to seconds from the first, sort if needed, fill meta."""
        if self.rows == 0:
            if self.skipped:
                raise InputError(
                    f"no usable rows: all {sum(self.skipped.values())} skipped "
                    f"({self._skip_text()})",
                    path=self.path,
                )
            raise InputError("no requests found (empty file?)", path=self.path)
        inp = _cat(self._inp, np.int32)
        out = _cat(self._out, np.int32)
        self._inp, self._out = [], []
        arrival = self._arrival()
        offsets = ids = None
        if self._hcount and sum(len(c) for c in self._hcount) == self.rows:
            counts = _cat(self._hcount, np.int64)
            offsets = np.zeros(self.rows + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            ids = _cat(self._hids, np.int64)
        session = None
        if self._sess and sum(len(s) for s in self._sess) == self.rows:
            session = _cat(self._sess, np.int64)
        w = Workload(inp, out, arrival, offsets, ids, self.block_tokens, session, self._meta())
        if offsets is not None and self.hash_unsigned:
            self._check_unsigned(w)
        _check_blocks(w)
        return _sort_by_time(w)

    def _signed_ids(self, ids: np.ndarray) -> np.ndarray:
        if ids.dtype == np.uint64:
            self.hash_unsigned = True
            return ids.view(np.int64)  # the same 64 bits: ids are only compared for equality
        ids = ids.astype(np.int64, copy=False)
        if not self.hash_negative and len(ids) and int(ids.min()) < 0:
            self.hash_negative = True
        return ids

    def _arrival(self) -> np.ndarray | None:
        if self._time_kind in (None, "none") or not self._times:
            return None
        if self._time_kind == "ns":
            ns = _cat(self._times, np.int64)
            self._times = []
            origin = int(ns.min())
            self.notes["time_origin"] = str(np.datetime64(origin, "ns")) + "Z"
            return (ns - origin).astype(np.float64) / 1e9  # ns -> s
        parts, units = self._times, self._units
        self._times, self._units = [], []
        unit = units[0]
        if any(u != unit for u in units):  # not in one file's column: each chunk to seconds
            parts, unit = [p.astype(np.float64) * u for p, u in zip(parts, units, strict=True)], 1.0
        return self._from_origin(parts, unit)

    def _from_origin(self, parts: list[np.ndarray], unit_s: float) -> np.ndarray:
        """Seconds from the first arrival: the origin is subtracted in the column's own unit
        (int64 exactly), then one division by ticks per second (1e9 for ns) rounds once; an
        epoch-ns time read as float64 seconds first was off by up to ~0.24 us (its ulp)."""
        per_s = 1.0 / unit_s  # ticks per second: 1, 1e3, 1e6, 1e9
        if abs(per_s - round(per_s)) < 1e-6:
            per_s = float(round(per_s))
        origin: int | float
        if all(p.dtype.kind in "iu" for p in parts):
            t = _cat(parts, np.int64)
            origin = int(t.min())
            if int(t.max()) - origin < 2**63:  # the differences fit int64
                self._note_origin(origin, unit_s)
                return (t - origin).astype(np.float64) / per_s
        t = _cat(parts, np.float64)
        origin = float(t.min())
        self._note_origin(origin, unit_s)
        return (t - origin) / per_s

    def _note_origin(self, origin: int | float, unit_s: float) -> None:
        """meta['time_origin_s'] (float seconds); a finer unit also gives the exact origin as
        read: meta['time_origin_ms' / '_us' / '_ns']."""
        self.notes["time_origin_s"] = float(origin) * unit_s
        name = _UNIT_NAMES.get(unit_s)
        if name and name != "s":
            self.notes[f"time_origin_{name}"] = origin

    def _check_unsigned(self, w: Workload) -> None:
        """Ids >= 2**63 (uint64) are kept as their int64 bits; with negative ids in the same
        file two different ids could share bits, so that is refused."""
        if self.hash_negative:
            raise InputError(
                "hash ids mix negative values and values >= 2**63 (uint64): as 64-bit ids "
                "they could collide; give them in one signedness",
                path=self.path,
            )
        w.meta["hash_ids_type"] = "uint64"

    def _skip_text(self) -> str:
        return ", ".join(f"{n} {r}" for r, n in self.skipped.most_common())

    def _meta(self) -> dict[str, object]:
        warnings: list[str] = []
        meta: dict[str, object] = {
            "source": self.path,
            "format": self.fmt,
            "rows": self.rows,
            "skipped_total": int(sum(self.skipped.values())),
            "skipped": dict(self.skipped),
            "skipped_examples": list(self.examples),
            "warnings": warnings,
        }
        meta.update(self.notes)
        if self._sess_codes:  # string keys by code: label k is id STRING_SESSIONS - k
            meta["session_labels"] = list(self._sess_codes)
        if self.sessionless:
            rows = "row has" if self.sessionless == 1 else "rows have"
            meta["rows_without_session"] = self.sessionless
            warnings.append(
                f"{self.sessionless:,} {rows} no session id (empty or null): "
                "each is counted as a session of its own"
            )
        for col, counts in self.value_counts.items():
            meta[f"by_{col}"] = dict(counts.most_common())
        return meta


def _cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def _sort_by_time(w: Workload) -> Workload:
    """Stable-sort by arrival when a trace is out of order; the count goes into the warnings."""
    warnings = w.meta["warnings"]
    assert isinstance(warnings, list)
    if w.arrival_s is None or len(w) < 2:
        return w
    out_of_order = int(np.count_nonzero(np.diff(w.arrival_s) < 0))
    w.meta["out_of_order"] = out_of_order
    if out_of_order == 0:
        return w
    rows = "row goes" if out_of_order == 1 else "rows go"
    warnings.append(f"timestamps not sorted ({out_of_order} {rows} back in time); sorted by time")
    return w.take(np.argsort(w.arrival_s, kind="stable"))


_BLOCK_SIZES = (16, 32, 64, 128, 256)  # tokens per KV block in common engines and traces


def _check_blocks(w: Workload) -> None:
    """Warn when rows hold more hash blocks than their prompt has blocks of w.block_tokens
    (Mooncake: exactly ceil(input / 512)): the hashes were cut at a smaller block size, and
    prefix hits counted at this size would claim more cached tokens than were reused."""
    if w.hash_offsets is None or w.hash_ids is None:
        return
    counts = np.diff(w.hash_offsets)
    over = int(np.count_nonzero(counts > _blocks_of(w, w.block_tokens)))
    if not over:
        return
    fits = [b for b in _BLOCK_SIZES if b < w.block_tokens and _fits(w, counts, b)]
    size, n = (f"probably {fits[-1]} tokens", str(fits[-1])) if fits else ("smaller", "N")
    fmt = w.meta.get("format")
    how = (
        f"--format {fmt} --map block_tokens={n}"
        if fmt in PRESETS
        else f"--map ...,block_tokens={n}"
    )
    warnings = w.meta["warnings"]
    assert isinstance(warnings, list)
    warnings.append(
        f"{over} {'row has' if over == 1 else 'rows have'} more hash blocks than "
        f"{w.block_tokens}-token blocks cover their prompt; the trace's block size is {size}: "
        f"give it with {how}"
    )


def _blocks_of(w: Workload, block_tokens: int) -> np.ndarray:
    return -(-w.input_len.astype(np.int64) // block_tokens)  # ceil(input / block_tokens)


def _fits(w: Workload, counts: np.ndarray, block_tokens: int) -> bool:
    return not bool(np.any(counts > _blocks_of(w, block_tokens)))
