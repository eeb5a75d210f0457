"""Where the seed's "the ratio does not depend on QPS" breaks: whole instances and unfilled batches.

Per rate lambda (requests/s): prefill instances n_p = max(1, ceil(lambda * E[p(I)] / rho));
decode instances n_d = max(1, ceil(lambda * osl * t(B) / (B * rho))) at the full batch B.
The realised decode batch per instance follows Little's law, b = lambda * osl * t(b) / n_d
(requests in decode = rate x residence, residence = osl steps of t(b) seconds), capped at B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pdplan.errors import ConfigError
from pdplan.plan.ratio import DEFAULT_RHO, DecodeFn

__all__ = ["QPSStability", "RatePoint", "default_rates", "qps_dependence"]


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
    crossover_qps: float | None  # smallest swept rate from which all points are within tol
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
) -> QPSStability:
    """Integer instance counts and the realised GPU ratio at each rate (see module doc)."""
    if prefill_s <= 0 or full_batch < 1 or osl <= 0:
        raise ConfigError("qps sweep needs positive prefill time, output length and batch")
    t_full = decode_step_fn(full_batch, ctx_per_seq)
    a = prefill_s / rho  # prefill instances per unit rate
    d = osl * t_full / (full_batch * rho)  # decode instances per unit rate
    asym = (a * prefill_gpus) / (d * decode_gpus)
    # ceil(x) <= x + 1: ratio error <= 1/(a*lam) upward and 1/(d*lam) downward
    bound = max(1.0 / (a * tol), (1.0 - tol) / (d * tol))
    lams = sorted(rates) if rates else default_rates(bound)
    pts = []
    for lam in lams:
        if lam <= 0:
            raise ConfigError(f"rate {lam} must be positive")
        n_p = max(1, math.ceil(lam * a - 1e-9))
        n_d = max(1, math.ceil(lam * d - 1e-9))
        b, t = _realised_batch(decode_step_fn, lam, osl, ctx_per_seq, n_d, full_batch)
        r = (n_p * prefill_gpus) / (n_d * decode_gpus)
        pts.append(
            RatePoint(
                lam,
                n_p,
                n_d,
                n_p * prefill_gpus,
                n_d * decode_gpus,
                r,
                b,
                b / t / decode_gpus,
                abs(r / asym - 1.0) <= tol,
            )
        )
    cross = None
    for i in range(len(pts) - 1, -1, -1):
        if not pts[i].within_tol:
            break
        cross = pts[i].qps
    notes = _notes(pts, asym, tol, cross, bound, a, d, full_batch, prefill_gpus, decode_gpus)
    return QPSStability(tuple(pts), asym, tol, cross, bound, notes)


def _notes(
    pts: list[RatePoint],
    asym: float,
    tol: float,
    cross: float | None,
    bound: float,
    a: float,
    d: float,
    full: int,
    gp: int,
    gd: int,
) -> tuple[str, ...]:
    low = pts[0]
    out = [
        f"each pool needs >= 1 whole instance: one prefill instance covers up to {1 / a:.3g} "
        f"QPS and one decode instance up to {1 / d:.3g} QPS, below that a pool idles",
        f"instances are whole: prefill in steps of {gp} GPUs, decode in steps of {gd} GPUs, "
        f"so the realised ratio jumps around {asym:.3g}",
        f"at {low.qps:g} QPS the decode batch is {low.decode_batch:.1f} of {full} (Little's "
        f"law), so D falls to {low.decode_tps_per_gpu:.0f} tok/s/GPU",
    ]
    if cross is not None:
        out.append(
            f"the ratio is independent of QPS only above ~{cross:g} QPS (within "
            f"{tol:.0%} of {asym:.3g} from there on; guaranteed above {bound:.3g} QPS)"
        )
    else:
        out.append(
            f"no swept rate keeps the ratio within {tol:.0%}; guaranteed above {bound:.3g} QPS"
        )
    return tuple(out)
