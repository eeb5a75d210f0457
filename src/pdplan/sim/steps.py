"""Closed-form decode runs: how many steps of linearly growing duration fit in a time span."""

from __future__ import annotations

import math

__all__ = ["steps_within"]


def steps_within(dt: float, a: float, cb: float, c0: float) -> int:
    """Whole decode steps that fit in dt seconds when step k (0-based) takes a + c0' + k*cb.

    With t_k = a + c*(C0 + k*B): T(n) = n*(a + c*C0) + c*B*n(n-1)/2 (design-notes s3);
    here `c0` = c*C0 and `cb` = c*B (s per step). Largest n with T(n) <= dt.
    """
    first = a + c0
    if cb <= 0.0:
        return int(dt // first) if first > 0 else 1 << 40
    # cb/2 n^2 + (first - cb/2) n - dt <= 0
    h = first - 0.5 * cb
    n = int((-h + math.sqrt(h * h + 2.0 * cb * dt)) / cb)
    # the guards in floats: m is n exactly (n < 2**53), and float x float is the same product
    # as float x int (which converts the int first), without the slow mixed-type operator
    m = float(n)
    while m > 0.0 and m * first + cb * m * (m - 1.0) * 0.5 > dt:  # float guard
        n -= 1
        m -= 1.0
    while (m + 1.0) * first + cb * (m + 1.0) * m * 0.5 <= dt:
        n += 1
        m += 1.0
    return n
