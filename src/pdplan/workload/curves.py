"""Rate curves of synthetic traffic: diurnal cosines and piecewise-linear points (--curve)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from pdplan._text import foreign_digits
from pdplan.errors import InputError
from pdplan.workload.values import parse_duration

__all__ = ["RateCurve", "parse_rate_curve"]

GRID = 1_000_000  # points of the rate-curve grid used to invert the cumulative rate


@dataclass(frozen=True)
class RateCurve:
    """Rate multiplier m(t) >= 0 (x --rate): 'diurnal' 1 - amp*cos(2 pi (t - phase) / period)
    (mean 1 over a period, trough at t = phase), or piecewise-linear 'points' (t_s, m), held
    constant past the last point (a time given twice steps from its first m to its second).
    synthesize() scales 'points' to mean 1 over the trace, so --rate is the mean rate either
    way and the points give only the shape."""

    kind: str
    period_s: float = 86400.0
    amp: float = 0.5
    phase_s: float = 0.0
    points: tuple[tuple[float, float], ...] = field(default_factory=tuple)

    def __call__(self, t: np.ndarray) -> np.ndarray:
        if self.kind == "diurnal":
            return 1.0 - self.amp * np.cos(2 * np.pi * (t - self.phase_s) / self.period_s)
        xs, ys = zip(*self.points, strict=True)
        return np.interp(t, xs, ys)  # held constant outside the given points

    def mean(self, horizon_s: float) -> float:
        """Mean of m(t) over [0, horizon_s] (exact for 'points': trapezoids between them)."""
        if self.kind == "diurnal":
            t = np.linspace(0.0, horizon_s, GRID)
            m = self(t)
            return float(np.sum((m[1:] + m[:-1]) / 2 * np.diff(t)) / horizon_s)
        return self._points_integral(horizon_s) / horizon_s

    def _points_integral(self, horizon_s: float) -> float:
        """Integral of the 'points' curve over [0, horizon_s], segment by segment. Sampling
        m(t) at the point times read a step (a time given twice) at its second m on both
        sides: 0=0,30m=0,30m=1 averaged 0.75 over 1 h, not 0.5, so --rate came out 2/3."""
        xs = np.array([x for x, _ in self.points], dtype=np.float64)
        ys = np.array([y for _, y in self.points], dtype=np.float64)
        # held constant before the first and past the last point
        xs = np.concatenate([[min(0.0, xs[0])], xs, [max(horizon_s, xs[-1])]])
        ys = np.concatenate([[ys[0]], ys, [ys[-1]]])
        a, b = np.clip(xs[:-1], 0.0, horizon_s), np.clip(xs[1:], 0.0, horizon_s)
        width = xs[1:] - xs[:-1]
        slope = np.divide(ys[1:] - ys[:-1], width, out=np.zeros_like(width), where=width > 0)
        m_a, m_b = ys[:-1] + slope * (a - xs[:-1]), ys[:-1] + slope * (b - xs[:-1])
        return float(np.sum((m_a + m_b) / 2 * (b - a)))  # trapezoid: exact on a line

    def scaled(self, factor: float) -> RateCurve:
        """The 'points' curve with every multiplier times `factor`."""
        return replace(self, points=tuple((t, m * factor) for t, m in self.points))


def parse_rate_curve(text: str | None) -> RateCurve | None:
    """'diurnal:PERIOD[:AMP[:PHASE]]' (e.g. diurnal:24h:0.6) or 'points:0=1,1h=3,2h=0.5'.
    Every refusal names --curve and the whole value (a bare "bad duration 'xx'" did not say
    which flag, nor which part of it)."""
    if not text:
        return None
    odd = foreign_digits(text)
    if odd:  # float() read 'diurnal:24h:０.5' as amplitude 0.5
        raise InputError(f"--curve {text!r}: {odd}")
    kind, _, rest = text.partition(":")
    try:
        curve = _curve(kind.strip().lower(), rest)
    except InputError as exc:
        raise InputError(f"--curve {text!r}: {exc}") from None
    except ValueError:
        curve = None
    if curve is None:
        raise InputError(
            f"--curve {text!r} is not a rate curve: use diurnal:24h[:AMP[:PHASE]] or "
            "points:0=1,1h=3"
        )
    return curve


def _curve(kind: str, rest: str) -> RateCurve | None:
    """The curve of one kind; None for an unknown kind; ValueError for a non-number."""
    if kind == "diurnal":
        bits = rest.split(":") if rest else []
        period = parse_duration(bits[0]) if bits else 86400.0
        amp = float(bits[1]) if len(bits) > 1 else 0.5
        phase = parse_duration(bits[2]) if len(bits) > 2 and bits[2] not in ("0", "") else 0.0
        if not 0.0 <= amp <= 1.0:
            raise InputError(f"diurnal amplitude {bits[1]!r} must be in [0, 1]")
        return RateCurve("diurnal", period, amp, phase)
    if kind != "points":
        return None
    pts = []
    for item in rest.split(","):
        t, _, m = item.partition("=")
        pts.append((0.0 if t.strip() in ("0", "") else parse_duration(t), float(m)))
    # by time only, stable: a time given twice is a step (0=3,1h=3,1h=1 drops to 1 at
    # 1h); sorting the (t, m) pairs put its 1 first, a ramp down and a jump back to 3
    pts.sort(key=lambda p: p[0])
    if any(m < 0 or not math.isfinite(m) for _, m in pts) or pts[-1][1] <= 0:
        raise InputError("rate points must be finite, >= 0 and the last one > 0")
    return RateCurve("points", points=tuple(pts))
