"""Prompt-length distributions for the ratio: an int list, a length,count histogram, a trace."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pdplan.errors import InputError

__all__ = ["Lengths", "parse_length_list", "read_lengths"]

_LIST_LINE = re.compile(r"^[\d\s,;]*$")
_HIST_LINE = re.compile(r"^\s*(\d+)\s*[,;\t ]\s*(\d+(?:\.\d*)?)\s*$")


@dataclass(frozen=True, eq=False)
class Lengths:
    """Prompt lengths (counts None: one request each) and, from a trace, the output lengths."""

    lengths: np.ndarray
    counts: np.ndarray | None = None
    output_mean: float | None = None
    source: str = ""

    @property
    def mean(self) -> float:
        w = np.ones(len(self.lengths)) if self.counts is None else self.counts
        return float((self.lengths * w).sum() / w.sum())


def parse_length_list(text: str, where: str = "--isl-dist") -> Lengths:
    """'500,1000,4000' or one int per line -> Lengths."""
    vals: list[int] = []
    for tok in re.split(r"[\s,;]+", text.strip()):
        if not tok:
            continue
        if not tok.isdigit() or int(tok) < 1:
            raise InputError(f"{where}: {tok!r} is not a positive whole number of tokens")
        vals.append(int(tok))
    if not vals:
        raise InputError(f"{where}: no lengths given")
    return Lengths(np.array(vals, dtype=np.int64), source=where)


def _histogram(lines: list[tuple[int, str]], path: str) -> Lengths:
    ls, cs = [], []
    for no, line in lines:
        m = _HIST_LINE.match(line)
        if not m:
            raise InputError(f"expected 'length,count', got {line.strip()!r}", path=path, line=no)
        if int(m.group(1)) < 1:
            raise InputError("length must be >= 1", path=path, line=no)
        ls.append(int(m.group(1)))
        cs.append(float(m.group(2)))
    if sum(cs) <= 0:
        raise InputError("histogram counts sum to 0", path=path)
    return Lengths(np.array(ls, dtype=np.int64), np.array(cs), source=path)


def read_lengths(path: str | Path) -> Lengths:
    """A list of ints (one per line or comma separated), a two-column length,count CSV (an
    optional header line is skipped), or any trace pdplan.workload.read_workload reads."""
    p = str(path)
    if not Path(p).is_file():
        raise InputError("no such file", path=p)
    try:
        text = Path(p).read_text()
    except UnicodeDecodeError:
        text = ""  # binary (parquet, gzip): a trace
    rows = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    body = rows[1:] if rows and re.search(r"[A-Za-z]", rows[0][1]) else rows
    # two numbers on each of >= 2 lines (after an optional header): a length,count histogram
    if len(body) >= 2 and all(_HIST_LINE.match(ln) for _, ln in body):
        return _histogram(body, p)
    if rows and all(_LIST_LINE.match(ln) for _, ln in rows):
        return parse_length_list(text, where=p)
    if len(body) >= 1 and body is not rows and _HIST_LINE.match(body[0][1]):
        return _histogram(body, p)  # header + a single histogram row
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
    out = float(np.mean(wl.output_len)) if len(wl.output_len) else None
    return Lengths(np.asarray(wl.input_len, dtype=np.int64), None, out, path)
