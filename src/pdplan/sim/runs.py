"""Runs of inter-token gaps: (first gap, last gap, steps, sequences) instead of one per token."""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["RunLog", "weighted_quantiles"]


class RunLog:
    """A run is `n` consecutive steps whose durations rise linearly from lo to hi seconds,
    each step giving one token to each of `w` sequences: n*w gaps in all."""

    __slots__ = ("hi", "lo", "n", "w")

    def __init__(self) -> None:
        self.lo, self.hi = array("d"), array("d")
        self.n, self.w = array("d"), array("d")

    def add(self, lo: float, hi: float, n: int, w: int) -> None:
        self.lo.append(lo)
        self.hi.append(hi)
        self.n.append(n)
        self.w.append(w)

    def __len__(self) -> int:
        return len(self.lo)

    @property
    def gaps(self) -> float:
        """Total number of gaps recorded."""
        return float(np.dot(np.frombuffer(self.n), np.frombuffer(self.w))) if len(self) else 0.0

    def mean(self) -> float:
        if not len(self):
            return float("nan")
        lo, hi = np.frombuffer(self.lo), np.frombuffer(self.hi)
        m = np.frombuffer(self.n) * np.frombuffer(self.w)
        return float(np.sum((lo + hi) / 2 * m) / np.sum(m))

    def quantiles(self, qs: list[float], points: int = 8) -> list[float]:
        """Quantiles of all gaps; a run is represented by `points` evenly spaced values (its
        steps are linear in k, so this is exact for short runs and close for long ones)."""
        if not len(self):
            return [float("nan")] * len(qs)
        lo, hi = np.frombuffer(self.lo), np.frombuffer(self.hi)
        n, w = np.frombuffer(self.n), np.frombuffer(self.w)
        k = np.minimum(n, points)
        j = np.arange(points)[None, :]
        valid = j < k[:, None]
        vals = lo[:, None] + (hi - lo)[:, None] * (j / np.maximum(k[:, None] - 1, 1))
        wts = np.where(valid, (n * w / k)[:, None], 0.0)
        return weighted_quantiles(vals.ravel(), wts.ravel(), qs)


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
