"""Synthetic traffic: Poisson / Gamma / fixed arrivals, rate curves, length distributions."""

from __future__ import annotations

import math

import numpy as np

from pdplan.errors import InputError
from pdplan.workload.core import Workload
from pdplan.workload.curves import GRID, RateCurve, parse_rate_curve
from pdplan.workload.lengths import LengthSpec, parse_length_spec
from pdplan.workload.values import parse_duration, real_number, whole_number

__all__ = ["LengthSpec", "RateCurve", "parse_length_spec", "parse_rate_curve", "synthesize"]

_MAX_REQUESTS = 100_000_000  # 100M requests ~ 1.6 GB of columns: the sanity cap
# Sanity caps on synthetic traffic (both far past any real deployment): a mean rate above
# 10 M req/s or a trace longer than 1e9 s (~32 years; its ms timestamps would still fit an
# int64, 9.2e18, but the float arrival times lose sub-ms resolution) is a unit mistake.
MAX_RATE = 1e7  # req/s
MAX_SPAN_S = 1e9  # s
# Gamma arrivals draw gaps with shape 1/cv^2 (dimensionless). Below cv = 1e-3 (shape 1e6)
# the gaps differ from 1/rate by under 0.1 %: that is --arrival fixed, and cv -> 0 divides
# by zero. Above cv = 100 (shape 1e-4) over 99 % of the gaps underflow to 0 s, so a trace
# is a few bursts whose rate and CV are far from the asked ones (and cv^2 overflows ~1e154).
MIN_CV = 1e-3  # dimensionless
MAX_CV = 100.0  # dimensionless
_SEED_END = 2**63  # exclusive seed bound (dimensionless): the int64 range, a larger one is a typo


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
    t = np.linspace(0.0, horizon, GRID)
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
        raise InputError(f"{count:,} requests is over the {_MAX_REQUESTS:,} cap")
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
    """A deterministic synthetic workload. Give n or duration_s; `rate` is the mean arrival
    rate (a 'points' curve is scaled to mean 1 over the trace). `joint`: resample (input,
    output) pairs from that workload instead of drawing input and output independently."""
    n, dur, rate, cv, seed = _check_args(n, duration_s, rate, cv, seed)
    curve = rate_curve if isinstance(rate_curve, RateCurve) else parse_rate_curve(rate_curve)
    params: dict[str, object] = dict(n=n, duration_s=dur, rate=rate, arrival=arrival, cv=cv)
    if curve is not None and curve.kind == "points":
        horizon = dur if dur is not None else float(n or 1) / rate  # mean rate: n over n/rate
        mean = curve.mean(horizon)
        if not mean > 0:
            raise InputError(f"--curve {rate_curve!r} is 0 over the whole trace (0-{horizon:g} s)")
        curve = curve.scaled(1.0 / mean)
        params["rate_curve_scale"] = 1.0 / mean  # x each point, so the mean rate is `rate`
    rng = np.random.default_rng(seed)
    t = _arrivals(n, dur, rate, arrival, cv, curve, rng)
    if len(t) == 0:
        raise InputError("no request arrives within the duration; raise rate or duration")
    joint = joint if joint is not None else _joint_file(input, output)
    inp, out, clipped, warnings = _lengths(len(t), input, output, joint, rng)
    warnings += _partial_period(curve, dur if dur is not None else float(t[-1]))
    params.update(input=str(input), output=str(output), rate_curve=str(rate_curve), seed=seed)
    params["joint"] = None if joint is None else joint.meta.get("source")
    meta = {"source": "synthetic", "format": "synthetic", "rows": len(t), "skipped_total": 0}
    meta.update(skipped={}, warnings=warnings, clipped=clipped, params=params)
    return Workload(inp.astype(np.int32), out.astype(np.int32), t, meta=meta)


def _check_args(
    n: object, duration_s: float | str | None, rate: object, cv: object, seed: object
) -> tuple[int | None, float | None, float, float, int]:
    """(n, duration in s, rate, cv, seed) as plain int / float; refuses a bad one by name."""
    if (n is None) == (duration_s is None):
        raise InputError("give exactly one of n (requests) or duration_s")
    dur = parse_duration(str(duration_s)) if duration_s is not None else None
    n = None if n is None else whole_number("n", n, 1)
    rate, cv = real_number("rate", rate), real_number("cv", cv)
    seed = whole_number("seed", seed, 0)
    if seed >= _SEED_END:
        raise InputError(f"seed={seed} must be a whole number >= 0 and < 2**63")
    for name, value in (("rate", rate), ("cv", cv)):  # name only the one that is wrong
        if not (value > 0 and math.isfinite(value)):
            raise InputError(f"{name}={value} must be a finite number > 0")
    if rate > MAX_RATE:
        raise InputError(f"rate={rate:g} req/s is over the {MAX_RATE:g} req/s cap: is it req/s?")
    if not MIN_CV <= cv <= MAX_CV:
        raise InputError(
            f"cv={cv:g} must be in [{MIN_CV:g}, {MAX_CV:g}] (below, use --arrival fixed; "
            "above, the gamma gaps underflow to 0 s)"
        )
    span = dur if dur is not None else (n or 1) / rate  # s, the trace's expected length
    if span > MAX_SPAN_S:
        raise InputError(
            f"rate={rate:g} req/s and {'duration' if dur is not None else f'n={n}'} give a "
            f"{span:.3g} s trace, over the {MAX_SPAN_S:g} s (~32 years) cap: its timestamps "
            "would overflow"
        )
    return n, dur, rate, cv, seed


def _partial_period(curve: RateCurve | None, horizon_s: float) -> list[str]:
    """A diurnal curve keeps the mean rate only over whole periods: say so when the trace
    covers part of one and its mean there is more than 10 % off."""
    if curve is None or curve.kind != "diurnal" or not horizon_s > 0:
        return []
    mean = curve.mean(horizon_s)
    if abs(mean - 1.0) <= 0.1:
        return []
    return [
        f"the diurnal curve averages {mean:.2f}x the rate over this {horizon_s:,.0f} s trace "
        f"(it keeps the mean rate over whole {curve.period_s:,.0f} s periods; change its phase "
        "or cover whole periods)"
    ]


def _lengths(
    m: int,
    input: str | int | LengthSpec,
    output: str | int | LengthSpec,
    joint: Workload | None,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, dict[str, int], list[str]]:
    """m input and output lengths, the clip counts per role, and a warning per clipping."""
    warnings: list[str]
    clipped, warnings = {"input": 0, "output": 0}, []
    if joint is not None:
        pick = rng.integers(0, len(joint), size=m)
        return joint.input_len[pick].copy(), joint.output_len[pick].copy(), clipped, warnings
    cols = []
    for role, text in (("input", input), ("output", output)):
        spec = _spec(text, role)
        vals, low, high = spec.sample_clipped(m, rng)
        clipped[role] = low + high
        if high:
            warnings.append(
                f"clipped {high:,} of {m:,} {role} lengths at {spec.cap:,} tokens (the MAX of "
                f"{text}): their mean is {vals.mean():,.0f}, not {spec.a:,.0f}"
            )
        if low:
            warnings.append(f"raised {low:,} of {m:,} {role} lengths drawn below 1 to 1 token")
        cols.append(vals)
    return cols[0], cols[1], clipped, warnings


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
