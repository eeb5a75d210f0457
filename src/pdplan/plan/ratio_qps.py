"""Where the seed's "the ratio does not depend on QPS" breaks: whole instances and unfilled batches.

Per rate lambda (requests/s): prefill instances n_p = max(1, ceil(lambda * E[p(I)] / rho));
decode instances n_d = max(1, ceil(lambda * osl * t(B) / (B * rho))) at the full batch B.
The realised decode batch per instance follows Little's law, b = lambda * osl * t(b) / n_d
(requests in decode = rate x residence, residence = osl steps of t(b) seconds), capped at B.
The rate above which the realised ratio stays within 10% is found exactly over the
whole-instance steps (exact_crossover), not only at the swept rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pdplan._text import gpus
from pdplan.errors import ConfigError
from pdplan.plan.ratio import DEFAULT_RHO, DecodeFn, check_pool

__all__ = ["QPSStability", "RatePoint", "default_rates", "exact_crossover", "qps_dependence"]

MAX_BREAKPOINTS = 2_000_000  # exact_crossover's walk: 16 MB per float64 array at most
TOL_EPS = 1e-9  # exactly 10% off counts as within 10% (float rounding must not decide it)


@dataclass(frozen=True)
class RatePoint:
    """Integer pools at one request rate and what the decode batch really is there."""

    qps: float
    n_prefill: int  # instances
    n_decode: int  # instances
    prefill_gpus: int
    decode_gpus: int
    ratio: float  # realised prefill GPUs / decode GPUs
    decode_batch: float  # realised mean batch per decode instance (Little's law)
    decode_tps_per_gpu: float  # realised D, output tokens/s per decode GPU
    within_tol: bool


@dataclass(frozen=True)
class QPSStability:
    """A rate sweep: the asymptotic ratio, where the integer ratio settles, why not below."""

    points: tuple[RatePoint, ...]
    asymptotic_ratio: float  # prefill GPUs / decode GPUs as lambda -> infinity
    tolerance: float
    crossover_qps: float | None  # within tol at every rate above it (exact_crossover)
    bound_qps: float  # above this rate the ceil() error is provably within tol
    notes: tuple[str, ...] = field(default=())


def _realised_batch(
    decode_step_fn: DecodeFn, lam: float, osl: float, ctx: float, n_d: int, full: int
) -> tuple[float, float]:
    """Fixed point b = lam*osl*t(b)/n_d (Little's law), capped at the full batch: (b, t(b))."""
    b = float(full)
    for _ in range(50):
        t = decode_step_fn(max(1, round(b)), ctx)
        nb = min(float(full), lam * osl * t / n_d)
        if abs(nb - b) < 1e-3:
            break
        b = nb
    b = max(b, 1e-9)
    return b, decode_step_fn(max(1, round(b)), ctx)


def default_rates(bound_qps: float, points: int = 16) -> list[float]:
    """A log grid from bound/30 to 3x bound, 3 significant figures."""
    grid = np.geomspace(bound_qps / 30.0, bound_qps * 3.0, points)
    return [float(f"{x:.3g}") for x in grid]


def exact_crossover(a: float, d: float, gp: int, gd: int, tol: float, bound: float) -> float | None:
    """The rate above which the realised GPU ratio stays within `tol` of the asymptote, exactly.

    n_p = max(1, ceil(lam*a)) and n_d = max(1, ceil(lam*d)) only change at the breakpoints
    k/a and k/d: between two neighbours (l, r] both are constant and equal their value at r.
    So the ratio is evaluated at every breakpoint up to `bound` (above it ceil(x) <= x + 1
    keeps it within tol) and the last one outside tol is the answer (it is itself outside:
    within tol holds for every rate strictly above it). 0.0: within tol at every rate; None:
    more than MAX_BREAKPOINTS to walk (the bound still holds).
    """
    kp, kd = math.ceil(bound * a) + 1, math.ceil(bound * d) + 1
    if kp + kd > MAX_BREAKPOINTS:
        return None
    lams = np.union1d(np.arange(1, kp + 1) / a, np.arange(1, kd + 1) / d)
    n_p = np.maximum(1.0, np.ceil(lams * a - 1e-9))  # same rounding as ratio_from_model
    n_d = np.maximum(1.0, np.ceil(lams * d - 1e-9))
    asym = (a * gp) / (d * gd)
    bad = np.abs((n_p * gp) / (n_d * gd) / asym - 1.0) > tol + TOL_EPS
    return float(lams[bad][-1]) if bad.any() else 0.0


def qps_dependence(
    prefill_s: float,
    decode_step_fn: DecodeFn,
    *,
    osl: float,
    ctx_per_seq: float,
    full_batch: int,
    prefill_gpus: int,
    decode_gpus: int,
    rho: float = DEFAULT_RHO,
    rates: list[float] | None = None,
    tol: float = 0.10,
    prefill_alone_s: float | None = None,
) -> QPSStability:
    """Integer instance counts and the realised GPU ratio at each rate (see module doc);
    `prefill_alone_s` (a prompt on an idle prefill instance) only feeds the notes."""
    if prefill_s <= 0 or full_batch < 1 or osl <= 0:
        raise ConfigError("qps sweep needs positive prefill time, output length and batch")
    t_full = decode_step_fn(full_batch, ctx_per_seq)
    a = prefill_s / rho  # prefill instances per unit rate
    d = osl * t_full / (full_batch * rho)  # decode instances per unit rate
    gp, gd = prefill_gpus, decode_gpus
    asym = (a * gp) / (d * gd)
    # ceil(x) <= x + 1: ratio error <= 1/(a*lam) upward and 1/(d*lam) downward
    bound = max(1.0 / (a * tol), (1.0 - tol) / (d * tol))
    pts = []
    for lam in sorted(rates) if rates else default_rates(bound):
        if not (lam > 0 and math.isfinite(lam)):
            raise ConfigError(f"rate {lam} must be a positive number")
        check_pool(lam, lam * max(a, d), "prefill or decode instances", "--rates value")
        n_p = max(1, math.ceil(lam * a - 1e-9))
        n_d = max(1, math.ceil(lam * d - 1e-9))
        b, t = _realised_batch(decode_step_fn, lam, osl, ctx_per_seq, n_d, full_batch)
        r = (n_p * gp) / (n_d * gd)
        pts.append(RatePoint(lam, n_p, n_d, n_p * gp, n_d * gd, r, b, b / t / gd,
                             abs(r / asym - 1.0) <= tol + TOL_EPS))  # fmt: skip
    cross = exact_crossover(a, d, gp, gd, tol, bound)
    notes = _pool_notes(pts[0], a, d, gp, gd, asym, full_batch)
    if prefill_alone_s is not None and prefill_alone_s > prefill_s * 1.005:
        notes.append(_idle_prefill_note(prefill_alone_s, prefill_s, rho, a))
    notes.append(_crossover_note(cross, bound, asym, tol))
    return QPSStability(tuple(pts), asym, tol, cross, bound, tuple(notes))


def _up(x: float, sig: int = 3) -> float:
    """x rounded up to `sig` significant figures, so 'above X' stays true when printed."""
    if x <= 0:
        return x
    m = 10.0 ** (math.floor(math.log10(x)) - sig + 1)
    return math.ceil(x / m - 1e-9) * m


def _pool_notes(
    low: RatePoint, a: float, d: float, gp: int, gd: int, asym: float, full: int
) -> list[str]:
    return [
        f"each pool needs >= 1 whole instance: one prefill instance covers up to {1 / a:.3g} "
        f"QPS and one decode instance up to {1 / d:.3g} QPS, below that a pool idles",
        f"instances are whole: prefill in steps of {gpus(gp)}, decode in steps of {gpus(gd)}, "
        f"so the realised ratio jumps around {asym:.3g}",
        f"at {low.qps:g} QPS the decode batch is {low.decode_batch:.1f} of {full} (Little's "
        f"law), so D falls to {low.decode_tps_per_gpu:.0f} tok/s/GPU",
    ]


def _idle_prefill_note(alone_s: float, prefill_s: float, rho: float, a: float) -> str:
    # a prompt meets an idle instance most of the time while the unbatched utilisation
    # lam * alone_s stays below rho (M/G/1: P(busy) = utilisation)
    return (
        f"a prefill instance batches only when prompts queue: below ~{rho / alone_s:.3g} QPS "
        f"per instance prompts mostly find it idle and are prefilled one at a time "
        f"({alone_s * 1e3:.1f} ms each, not the loaded {prefill_s * 1e3:.1f} ms); it keeps up, "
        f"so below {1 / a:.3g} QPS the one-instance minimum, not P, sizes the prefill pool"
    )


def _crossover_note(cross: float | None, bound: float, asym: float, tol: float) -> str:
    if cross is None:
        return (
            f"the ratio is independent of QPS (within {tol:.0%} of {asym:.3g}) above "
            f"{_up(bound):g} QPS (guaranteed: each pool is at most one instance over)"
        )
    if cross == 0.0:
        return f"the ratio is independent of QPS: within {tol:.0%} of {asym:.3g} at every rate"
    return (
        f"the ratio is independent of QPS only above {_up(cross):g} QPS (within {tol:.0%} of "
        f"{asym:.3g} at every rate above it, checked at each whole-instance step; "
        f"guaranteed above {_up(bound):g} QPS)"
    )
