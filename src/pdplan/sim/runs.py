"""Runs of inter-token gaps: (first gap, last gap, steps, sequences) instead of one per token."""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Callable

import numpy as np

__all__ = ["RUN_PACK", "RUN_PACK2", "RunLog", "weighted_quantiles"]

RUN_PACK = struct.Struct("=4f").pack  # (lo, hi, n, w) -> 16 bytes, as array("f") holds them
RUN_PACK2 = struct.Struct("=8f").pack  # two runs' records in one call (the same 32 bytes)

# runs per pass when building the quantile histogram: a pass holds the four float64 columns
# and ~10 more arrays of that length in _accumulate, ~100 B a run, so 2^18 runs keep it near
# 25 MiB (2^20 made the summary's ~100 MiB transient the peak RSS of a 1M-request run:
# 481 against 376 MiB, benchmarks/bench_sim.py --mem-n 1000000)
_CHUNK = 1 << 18
_REL_BIN = 1e-4  # histogram bin width relative to its value (quantiles within 0.01 %)
_MAX_BINS = 400_000


class RunLog:
    """A run is `n` consecutive steps whose durations rise linearly from lo to hi seconds,
    each step giving one token to each of `w` sequences: n*w gaps in all. Stored flat as
    float32 quadruples (16 B a run; 7 significant digits are ample for gaps); the hot loop
    appends with `put(RUN_PACK(lo, hi, n, w))`, a bound array.frombytes (half the time of
    array.extend with a tuple, which converts item by item), or `push((lo, hi, n, w))`."""

    __slots__ = ("buf", "push", "put")

    def __init__(self) -> None:
        self.buf = array("f")
        self.push = self.buf.extend
        self.put = self.buf.frombytes

    def add(self, lo: float, hi: float, n: int, w: int) -> None:
        self.push((lo, hi, n, w))

    def __len__(self) -> int:
        return len(self.buf) // 4

    def _cols(self, a: int = 0, b: int | None = None) -> tuple[np.ndarray, ...]:
        """float64 (lo, hi, n, w) of runs a..b."""
        v = np.frombuffer(self.buf, dtype=np.float32).reshape(-1, 4)[a:b]
        return tuple(v[:, j].astype(np.float64) for j in range(4))

    @property
    def gaps(self) -> float:
        """Total number of gaps recorded."""
        return sum(float(np.dot(c[2], c[3])) for c in self._chunks())

    def _chunks(self):  # type: ignore[no-untyped-def]
        for a in range(0, len(self), _CHUNK):
            yield self._cols(a, a + _CHUNK)

    def mean(self) -> float:
        if not len(self):
            return float("nan")
        s = m = 0.0
        for lo, hi, n, w in self._chunks():
            nw = n * w
            s += float(np.dot((lo + hi) * 0.5, nw))
            m += float(nw.sum())
        return s / m

    def quantiles(self, qs: list[float]) -> list[float]:
        """Quantiles of all gaps. A run of n > 1 steps, spaced d = (hi-lo)/(n-1), spreads its
        n*w gaps uniformly over [lo - d/2, hi + d/2]; a one-step run is a point. Masses go
        into a log-spaced histogram (bins 0.01 % wide) built in chunks, so memory stays
        O(chunk + bins) however many runs there are; the answer interpolates in its bin.
        Zero gaps (the tokens after the first of a speculative step arrive with it) are a
        point mass counted apart: in a linear bin from 0 they read as a few microseconds."""
        if not len(self):
            return [float("nan")] * len(qs)
        zero, lo_min, hi_max = 0.0, math.inf, -math.inf
        for lo, hi, n, w in self._chunks():
            z = hi <= 0.0  # lo <= hi: a run of zero gaps
            zero += float(np.dot(n[z], w[z]))
            lo, hi, n = lo[~z], hi[~z], n[~z]
            if len(lo):
                d = _half_step(lo, hi, n)
                lo_min, hi_max = (
                    min(lo_min, float((lo - d).min())),
                    max(hi_max, float((hi + d).max())),
                )
        if math.isinf(lo_min):  # every gap is zero
            return [0.0] * len(qs)
        edges = _edges(lo_min, hi_max)
        mass = np.zeros(len(edges))
        for lo, hi, n, w in self._chunks():
            z = hi > 0.0
            _accumulate(mass, edges, lo[z], hi[z], n[z], w[z])
        return _with_zeros(zero, float(mass.sum()), qs, lambda q: _hist_quantiles(mass, edges, q))


def _with_zeros(
    zero: float, rest: float, qs: list[float], rest_q: Callable[[list[float]], list[float]]
) -> list[float]:
    """Quantiles of a point mass `zero` at 0 s below a distribution of mass `rest` (whose
    quantiles rest_q gives): q at or under the zeros' share is 0, above it the rest's q'."""
    share = zero / (zero + rest)
    above = [(q - share) / (1.0 - share) for q in qs if q > share]
    vals = iter(rest_q(above) if above else [])
    return [next(vals) if q > share else 0.0 for q in qs]


def _half_step(lo: np.ndarray, hi: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.where(n > 1, (hi - lo) / np.maximum(n - 1, 1), 0.0) * 0.5


def _edges(lo: float, hi: float) -> np.ndarray:
    """Left edges of log-spaced bins covering [lo, hi] (linear when lo <= 0)."""
    if lo > 0:
        k = min(int(math.log(hi / lo) / math.log1p(_REL_BIN)) + 2, _MAX_BINS)
        return np.geomspace(lo, hi, k) if k > 1 else np.array([lo])
    k = min(int((hi - lo) / max(abs(hi), 1e-12) / _REL_BIN) + 2, _MAX_BINS)
    return np.linspace(lo, hi, max(k, 2))


def _accumulate(
    mass: np.ndarray,
    edges: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    n: np.ndarray,
    w: np.ndarray,
) -> None:
    """Add the runs' gap mass to the histogram (exact within each bin for uniform spreads)."""
    nb = len(edges)
    d = _half_step(lo, hi, n)
    a, b, m = lo - d, hi + d, n * w
    ia = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, nb - 1)
    ib = np.clip(np.searchsorted(edges, b, side="right") - 1, 0, nb - 1)
    same = ia == ib
    mass += np.bincount(ia[same], m[same], nb)
    sp = ~same
    ia, ib, a, b = ia[sp], ib[sp], a[sp], b[sp]
    rho = m[sp] / (b - a)  # gaps per second of the uniform spread
    mass += np.bincount(ia, rho * (edges[ia + 1] - a), nb)  # first, partial bin
    mass += np.bincount(ib, rho * (b - edges[ib]), nb)  # last, partial bin
    dens = np.cumsum(np.bincount(ia + 1, rho, nb + 1) - np.bincount(ib, rho, nb + 1))[:nb]
    width = np.diff(edges, append=edges[-1])
    mass += dens * width  # bins fully inside a spread


def _hist_quantiles(mass: np.ndarray, edges: np.ndarray, qs: list[float]) -> list[float]:
    cum = np.cumsum(mass)
    total = cum[-1]
    out = []
    for q in qs:
        j = min(int(np.searchsorted(cum, q * total)), len(mass) - 1)
        prev = cum[j - 1] if j else 0.0
        width = edges[j + 1] - edges[j] if j + 1 < len(edges) else 0.0
        frac = (q * total - prev) / mass[j] if mass[j] > 0 else 0.0
        out.append(float(edges[j] + min(max(frac, 0.0), 1.0) * width))
    return out


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: list[float]) -> list[float]:
    """Quantiles of a weighted sample (inverse of the weighted CDF, lower value at ties)."""
    keep = weights > 0
    v, wt = values[keep], weights[keep]
    if not len(v):
        return [float("nan")] * len(qs)
    order = np.argsort(v, kind="stable")
    v, cum = v[order], np.cumsum(wt[order])
    total = cum[-1]
    return [float(v[min(np.searchsorted(cum, q * total), len(v) - 1)]) for q in qs]
