"""Prompt-length distributions for the ratio: reading them, and E[p(I)] over them.

A --lengths file is read by one rule, and the reading chosen is said in a note:
  - a header naming two columns, the second a count ('length,count', 'isl,freq') -> a
    length,count histogram; any other header -> a request trace (workload readers);
  - no header, two or more rows of exactly two numbers -> a length,count histogram;
  - no header, otherwise numbers only (one per line, or a list on one line) -> prompt
    lengths, one request each. A single row '4000,10' is two lengths: a one-row histogram
    needs the header.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pdplan.errors import ConfigError, InputError

__all__ = [
    "LengthEffect",
    "Lengths",
    "lengths_option",
    "parse_length_list",
    "prefill_by_distribution",
    "read_lengths",
]

_NUM = r"[-+]?\d+(?:\.\d*)?"
_NUMS_LINE = re.compile(r"^[-+\d\s,;.]*$")  # numbers and separators only
_ROW2 = re.compile(rf"^\s*({_NUM})\s*[,;\t ]\s*({_NUM})\s*$")
_COUNT_COL = re.compile(r"count|freq|weight|requests|^n$|^num$|^w$")


@dataclass(frozen=True, eq=False)
class Lengths:
    """Prompt lengths (counts None: one request each) and, from a trace, the output lengths."""

    lengths: np.ndarray
    counts: np.ndarray | None = None
    output_mean: float | None = None
    source: str = ""
    reading: str = ""  # how the input was read, for the output notes
    outputs: np.ndarray | None = None  # a trace's output lengths, tokens, one per request

    @property
    def mean(self) -> float:
        w = np.ones(len(self.lengths)) if self.counts is None else self.counts
        return float((self.lengths * w).sum() / w.sum())


def parse_length_list(text: str, where: str = "--isl-dist", why: str = "") -> Lengths:
    """'500,1000,4000' or one int per line -> Lengths (one request each)."""
    vals: list[int] = []
    for tok in re.split(r"[\s,;]+", text.strip()):
        if not tok:
            continue
        if not tok.isdigit() or int(tok) < 1:
            raise InputError(f"{where}: {tok!r} is not a positive whole number of tokens")
        vals.append(int(tok))
    if not vals:
        raise InputError(f"{where} is empty: give prompt lengths like 500,4000")
    reading = f"{where}: read as {len(vals)} prompt lengths, one request each" + (
        f" ({why})" if why else ""
    )
    return Lengths(np.array(vals, dtype=np.int64), source=where, reading=reading)


def lengths_option(path: Path | None, isl_dist: str | None, isl: float | None) -> Lengths | None:
    """The length distribution of `ratio --lengths FILE` / `--isl-dist LIST`, or None."""
    if path is not None and isl_dist is not None:
        raise ConfigError("give --lengths FILE or --isl-dist LIST, not both")
    if (path is not None or isl_dist is not None) and isl is not None:
        raise ConfigError("--isl is ignored with --lengths/--isl-dist: give one")
    if path is not None:
        return read_lengths(path)
    return None if isl_dist is None else parse_length_list(isl_dist)


def _histogram(lines: list[tuple[int, str]], path: str, why: str) -> Lengths:
    ls, cs = [], []
    for no, line in lines:
        m = _ROW2.match(line)
        if not m:
            raise InputError(f"expected 'length,count', got {line.strip()!r}", path=path, line=no)
        length, count = float(m.group(1)), float(m.group(2))
        if length < 1 or length != int(length):
            raise InputError(f"length must be a whole number >= 1, not {m.group(1)}", path=path,
                             line=no)  # fmt: skip
        if count < 0:
            raise InputError(f"count must be >= 0, not {m.group(2)}", path=path, line=no)
        ls.append(int(length))
        cs.append(count)
    if not ls or sum(cs) <= 0:
        raise InputError("histogram has no rows or its counts sum to 0", path=path)
    reading = (
        f"{path}: read as a length,count histogram ({len(ls)} rows, {sum(cs):g} requests; {why})"
    )
    return Lengths(np.array(ls, dtype=np.int64), np.array(cs), source=path, reading=reading)


def read_lengths(path: str | Path) -> Lengths:
    """A --lengths file by the module doc's rule: histogram, list of lengths, or a trace."""
    p = str(path)
    if Path(p).is_dir():
        raise InputError("is a directory: give a lengths file, histogram or trace", path=p)
    if not Path(p).is_file():
        raise InputError("no such file", path=p)
    try:
        text = Path(p).read_text()
    except UnicodeDecodeError:
        text = ""  # binary (parquet, gzip): a trace
    rows = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if rows and re.search(r"[A-Za-z]", rows[0][1]):
        cols = [c.strip().lower() for c in re.split(r"[,;\t ]+", rows[0][1].strip())]
        if len(cols) == 2 and _COUNT_COL.search(cols[1]):
            return _histogram(rows[1:], p, f"the header names {cols[0]},{cols[1]}")
        return _from_trace(p)
    if rows and all(_NUMS_LINE.match(ln) for _, ln in rows):
        if len(rows) >= 2 and all(_ROW2.match(ln) for _, ln in rows):
            return _histogram(rows, p, "every row holds two numbers")
        why = (
            "numbers on one line; a one-row histogram needs a 'length,count' header"
            if len(rows) == 1
            else "numbers only, not two on every row"
        )
        return parse_length_list(text, where=p, why=why)
    return _from_trace(p)


def _from_trace(path: str) -> Lengths:
    from pdplan.workload.readers import read_workload

    try:
        wl = read_workload(path)
    except InputError as exc:  # the reader's hints name flags `ratio` does not take
        msg = str(exc)
        msg = msg.replace(
            "use --skip-bad to skip such rows",
            "`pdplan workload convert --skip-bad` writes a copy without them",
        ).replace(
            "give --format or --map", "convert it: `pdplan workload convert --format` or --map"
        )
        raise InputError(msg) from None
    if len(wl) == 0:
        raise InputError("trace has no requests", path=path)
    outs = np.asarray(wl.output_len, dtype=np.int64) if len(wl.output_len) == len(wl) else None
    out = float(np.mean(wl.output_len)) if len(wl.output_len) else None
    reading = f"{path}: read as a request trace ({len(wl)} requests)"
    return Lengths(np.asarray(wl.input_len, dtype=np.int64), None, out, path, reading, outs)


@dataclass(frozen=True)
class LengthEffect:
    """Jensen: the mean per-request prefill time vs the time of the mean length."""

    requests: float
    mean_len: float
    mean_time: float  # E[p(I)], seconds
    time_of_mean: float  # p(E[I]), seconds
    error_pct: float  # (p(E[I]) - E[p(I)]) / E[p(I)] * 100; negative = one number under-estimates


def _bucket(lengths: np.ndarray, counts: np.ndarray, max_points: int) -> tuple[np.ndarray, ...]:
    """Unique lengths with weights; more than max_points are merged into log-spaced bins
    evaluated at each bin's count-weighted mean length (p is smooth, so the error is small)."""
    uniq, inv = np.unique(lengths, return_inverse=True)
    w = np.bincount(inv, weights=counts)
    if len(uniq) <= max_points:
        return uniq.astype(float), w
    edges = np.geomspace(uniq[0], uniq[-1] + 1, max_points + 1)
    idx = np.clip(np.searchsorted(edges, uniq, side="right") - 1, 0, max_points - 1)
    wb = np.bincount(idx, weights=w, minlength=max_points)
    lb = np.bincount(idx, weights=w * uniq, minlength=max_points)
    keep = wb > 0
    return lb[keep] / wb[keep], wb[keep]


def prefill_by_distribution(
    prefill_time_fn: Callable[[int], float],
    lengths: np.ndarray | list[int],
    counts: np.ndarray | list[float] | None = None,
    max_points: int = 400,
) -> LengthEffect:
    """E[p(I)] over a list of lengths (or histogram bins with counts) vs p(E[I])."""
    ln = np.asarray(lengths, dtype=np.int64)
    ct = np.ones(len(ln)) if counts is None else np.asarray(counts, dtype=float)
    if len(ln) == 0 or len(ct) != len(ln):
        raise ConfigError(f"length distribution: {len(ln)} lengths, {len(ct)} counts")
    if (ln < 1).any() or (ct < 0).any() or ct.sum() <= 0:
        raise ConfigError("length distribution: lengths must be >= 1 and counts >= 0, not all 0")
    pts, w = _bucket(ln, ct, max_points)
    times = np.array([prefill_time_fn(max(1, round(x))) for x in pts])
    total = float(w.sum())
    mean_len = float((pts * w).sum() / total)
    e_p = float((times * w).sum() / total)
    p_e = float(prefill_time_fn(max(1, round(mean_len))))
    return LengthEffect(total, mean_len, e_p, p_e, (p_e - e_p) / e_p * 100.0)
