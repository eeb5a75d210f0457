"""Synthetic traffic: Poisson / Gamma / fixed arrivals, rate curves, length distributions."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pdplan.errors import InputError
from pdplan.workload.core import Workload
from pdplan.workload.values import INT32_MAX, parse_duration

__all__ = ["LengthSpec", "RateCurve", "parse_length_spec", "parse_rate_curve", "synthesize"]

_MAX_REQUESTS = 100_000_000  # 100M requests ~ 1.6 GB of columns: the sanity cap
_GRID = 1_000_000  # points of the rate-curve grid used to invert the cumulative rate


@dataclass(frozen=True, eq=False)
class LengthSpec:
    """A token-length distribution: fixed, uniform [a, b], lognormal (mean a, log-sigma b,
    clipped at `cap`), or empirical (resample `values`, optionally weighted)."""

    kind: str
    a: float = 0.0
    b: float = 0.0
    cap: int = INT32_MAX
    values: np.ndarray | None = None
    weights: np.ndarray | None = None

    @classmethod
    def empirical(cls, values: np.ndarray, weights: np.ndarray | None = None) -> LengthSpec:
        if len(values) == 0:
            raise InputError("empirical length distribution needs at least one value")
        w = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)
        return cls("empirical", values=np.asarray(values, dtype=np.int64), weights=w)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """n lengths (int32) and how many were clipped into [1, cap]."""
        if self.kind == "fixed":
            raw = np.full(n, self.a)
        elif self.kind == "uniform":
            raw = rng.integers(int(self.a), int(self.b) + 1, size=n).astype(np.float64)
        elif self.kind == "lognormal":
            # lognormal with mean a: mu = ln(a) - sigma^2 / 2 (E[X] = exp(mu + sigma^2/2))
            mu = math.log(self.a) - self.b**2 / 2
            raw = np.rint(rng.lognormal(mu, self.b, size=n))
        elif self.kind == "empirical" and self.values is not None:
            raw = rng.choice(self.values, size=n, p=self.weights).astype(np.float64)
        else:
            raise InputError(f"unknown length distribution {self.kind!r}")
        clipped = int(np.count_nonzero((raw < 1) | (raw > self.cap)))
        return np.clip(raw, 1, self.cap).astype(np.int32), clipped


_FORMS = {"fixed": "fixed:N", "uniform": "uniform:LO:HI", "lognormal": "lognormal:MEAN:SIGMA[:MAX]"}


def parse_length_spec(text: str | int | LengthSpec) -> LengthSpec:
    """'512' | 'fixed:512' | 'uniform:100:2000' | 'lognormal:MEAN:SIGMA[:MAX]'."""
    if isinstance(text, LengthSpec):
        return text
    parts = str(text).strip().split(":")
    kind, args = (parts[0], parts[1:]) if not parts[0].isdigit() else ("fixed", parts)
    try:
        nums = [float(a) for a in args]
    except ValueError:
        raise InputError(f"bad length spec {text!r}: numbers expected after the kind") from None
    shapes = {"fixed": (1, 1), "uniform": (2, 2), "lognormal": (2, 3)}
    if kind not in shapes:
        raise InputError(
            f"bad length spec {text!r}: use N, fixed:N, uniform:LO:HI, lognormal:MEAN:SIGMA[:MAX]"
            " or empirical:FILE"
        )
    lo, hi = shapes[kind]
    if not lo <= len(nums) <= hi:
        raise InputError(f"bad length spec {text!r}: use {_FORMS[kind]}")
    if any(not math.isfinite(x) or x < 0 for x in nums):
        raise InputError(f"bad length spec {text!r}: parameters must be finite numbers >= 0")
    if (kind == "fixed" and nums[0] < 1) or (kind == "uniform" and not 1 <= nums[0] <= nums[1]):
        raise InputError(f"bad length spec {text!r}: lengths must be >= 1 (and LO <= HI)")
    if kind == "lognormal" and (nums[0] < 1 or nums[1] <= 0):
        raise InputError(f"bad length spec {text!r}: MEAN >= 1 and SIGMA > 0 required")
    cap = int(min(nums[2], INT32_MAX)) if len(nums) == 3 else INT32_MAX
    return LengthSpec(kind, nums[0], nums[1] if len(nums) > 1 else 0.0, max(cap, 1))


@dataclass(frozen=True)
class RateCurve:
    """Rate multiplier m(t) >= 0 (x --rate): 'diurnal' 1 - amp*cos(2 pi (t - phase) / period)
    (mean 1 over a period, trough at t = phase), or piecewise-linear 'points' (t_s, m)."""

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


def parse_rate_curve(text: str | None) -> RateCurve | None:
    """'diurnal:PERIOD[:AMP[:PHASE]]' (e.g. diurnal:24h:0.6) or 'points:0=1,1h=3,2h=0.5'."""
    if not text:
        return None
    kind, _, rest = text.partition(":")
    try:
        if kind == "diurnal":
            bits = rest.split(":") if rest else []
            period = parse_duration(bits[0]) if bits else 86400.0
            amp = float(bits[1]) if len(bits) > 1 else 0.5
            phase = parse_duration(bits[2]) if len(bits) > 2 and bits[2] not in ("0", "") else 0.0
            if not 0.0 <= amp <= 1.0:
                raise InputError("diurnal amplitude must be in [0, 1]")
            return RateCurve("diurnal", period, amp, phase)
        if kind == "points":
            pts = []
            for item in rest.split(","):
                t, _, m = item.partition("=")
                pts.append((0.0 if t.strip() in ("0", "") else parse_duration(t), float(m)))
            pts.sort()
            if any(m < 0 or not math.isfinite(m) for _, m in pts) or pts[-1][1] <= 0:
                raise InputError("rate points must be >= 0 and the last one > 0")
            return RateCurve("points", points=tuple(pts))
    except ValueError:
        pass
    raise InputError(f"bad rate curve {text!r}: use diurnal:24h[:AMP[:PHASE]] or points:0=1,1h=3")


def _unit_gaps(n: int, arrival: str, cv: float, rng: np.random.Generator) -> np.ndarray:
    """n inter-arrival gaps with mean 1 (in units of 1/rate)."""
    if arrival == "poisson":
        return rng.exponential(1.0, size=n)
    if arrival == "gamma":
        # Gamma(shape k = 1/cv^2, scale = cv^2): mean 1, coefficient of variation cv
        return rng.gamma(1.0 / cv**2, cv**2, size=n)
    if arrival == "fixed":
        return np.ones(n)
    raise InputError(f"unknown arrival process {arrival!r}: poisson, gamma or fixed")


def _cumulative(curve: RateCurve, rate: float, horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid t and Lambda(t) = integral of rate * m(t) dt (trapezoid), expected arrivals by t."""
    t = np.linspace(0.0, horizon, _GRID)
    r = rate * curve(t)
    lam = np.concatenate([[0.0], np.cumsum((r[1:] + r[:-1]) / 2 * np.diff(t))])
    return t, lam


def _arrivals(
    n: int | None,
    duration_s: float | None,
    rate: float,
    arrival: str,
    cv: float,
    curve: RateCurve | None,
    rng: np.random.Generator,
) -> np.ndarray:
    horizon = duration_s if duration_s is not None else 2.0 * (n or 1) / rate + 1.0
    t_grid = lam = None
    if curve is not None:
        t_grid, lam = _cumulative(curve, rate, horizon)
        while n is not None and lam[-1] < n + 1:
            horizon *= 2
            t_grid, lam = _cumulative(curve, rate, horizon)
    budget = n if n is not None else int(rate * horizon if lam is None else lam[-1])
    count = budget if n is not None else int(budget + 10 * math.sqrt(budget * max(cv, 1) ** 2) + 16)
    if count > _MAX_REQUESTS:
        raise InputError(f"{count} requests is over the {_MAX_REQUESTS:,} cap")
    need = float(n) if n is not None else float(budget if lam is None else lam[-1])
    gaps = _unit_gaps(count, arrival, cv, rng)
    op = np.cumsum(gaps) - gaps[0]  # operational time (expected arrivals), first arrival at 0
    while n is None and op[-1] < need:  # rare: the 10-sigma margin was not enough
        more = np.cumsum(_unit_gaps(count, arrival, cv, rng)) + op[-1]
        op = np.concatenate([op, more])
    t = op / rate if t_grid is None or lam is None else np.interp(op, lam, t_grid)
    if duration_s is not None:
        t = t[t < duration_s]
    return t[:n] if n is not None else t


def synthesize(
    *,
    n: int | None = None,
    duration_s: float | str | None = None,
    rate: float = 1.0,
    arrival: str = "poisson",
    cv: float = 1.0,
    input: str | int | LengthSpec = "fixed:1024",
    output: str | int | LengthSpec = "fixed:256",
    rate_curve: str | RateCurve | None = None,
    joint: Workload | None = None,
    seed: int = 0,
) -> Workload:
    """A deterministic synthetic workload. Give n or duration_s. `joint`: resample (input,
    output) pairs from that workload instead of drawing input and output independently."""
    if (n is None) == (duration_s is None):
        raise InputError("give exactly one of n (requests) or duration_s")
    dur = parse_duration(str(duration_s)) if duration_s is not None else None
    if n is not None and n <= 0:
        raise InputError("n must be positive")
    for name, value in (("rate", rate), ("cv", cv)):  # name only the one that is wrong
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"{name}={value} must be a finite number > 0")
    curve = rate_curve if isinstance(rate_curve, RateCurve) else parse_rate_curve(rate_curve)
    rng = np.random.default_rng(seed)
    t = _arrivals(n, dur, rate, arrival, cv, curve, rng)
    m = len(t)
    if m == 0:
        raise InputError("no request arrives within the duration; raise rate or duration")
    clipped = {"input": 0, "output": 0}
    joint = joint if joint is not None else _joint_file(input, output)
    if joint is not None:
        pick = rng.integers(0, len(joint), size=m)
        inp, out = joint.input_len[pick].copy(), joint.output_len[pick].copy()
    else:
        inp, clipped["input"] = _spec(input, "input").sample(m, rng)
        out, clipped["output"] = _spec(output, "output").sample(m, rng)
    params = dict(n=n, duration_s=dur, rate=rate, arrival=arrival, cv=cv, input=str(input))
    params.update(output=str(output), rate_curve=str(rate_curve), seed=seed)
    params["joint"] = None if joint is None else joint.meta.get("source")
    meta = {"source": "synthetic", "format": "synthetic", "rows": m, "skipped_total": 0}
    meta.update(skipped={}, warnings=[], clipped=clipped, params=params)
    return Workload(inp.astype(np.int32), out.astype(np.int32), t, meta=meta)


def _empirical_file(spec: object) -> str | None:
    text = str(spec)
    return text.partition(":")[2] if text.startswith("empirical:") else None


def _joint_file(inp: object, out: object) -> Workload | None:
    """input and output both 'empirical:SAME_FILE': resample whole (input, output) pairs."""
    path = _empirical_file(inp)
    if path and path == _empirical_file(out):
        from pdplan.workload.readers import read_workload

        return read_workload(path)
    return None


def _spec(spec: str | int | LengthSpec, role: str) -> LengthSpec:
    """A LengthSpec; 'empirical:FILE' resamples that trace's input or output lengths."""
    path = _empirical_file(spec)
    if path:
        from pdplan.workload.readers import read_workload

        w = read_workload(path)
        return LengthSpec.empirical(w.input_len if role == "input" else w.output_len)
    return parse_length_spec(spec)
