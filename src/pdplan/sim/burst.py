"""Speculative instances (perf.spec_decode): steps priced per token, tokens in bursts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.sim.runs import RUN_PACK

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["BurstMixin"]

_pack = RUN_PACK  # 4 floats -> the 16 bytes of one ITL run record


class BurstMixin:
    """Methods of Instance for a step model that emits `burst` > 1 tokens a decode step."""

    __slots__ = ()

    def _close_burst(self: Instance, n: int, lo: float, slope: float, st: float) -> None:
        """ITL of a speculative instance's run of n per-token steps (lo + slope * k seconds
        each): whole steps of `burst` tokens arrive together, so the regular gaps are
        1 / burst gaps of a step (burst x the per-token time) and the rest none. A first step
        after a stall (or with fresh joins) keeps its one gap as a plain instance records it
        (the stall plus a per-token step: short of the real gap by under one step), so the
        mean gap stays TPOT's."""
        e, put, b = self.burst, self.itl_put, self.B
        first = 1 if (self.first_w != b or st) else 0
        if first:
            w = self.first_w
            if n and self.join_stall:
                w -= self._joiner_gaps(lo + st)
            if w > 0:
                put(_pack(lo + st, lo + st, 1, w))
        m = n - first
        if m > 0:
            lo2 = lo + slope * first
            put(_pack(lo2 * e, (lo + slope * (n - 1)) * e, m / e, b))
            put(_pack(0.0, 0.0, m - m / e, b))

    def _burst_tokens(self: Instance) -> int:
        """Tokens each decode of a speculative instance gets from a mixed step, priced whole
        (perf.spec_decode): `burst` on average, as whole tokens (the fraction carried over);
        the extra ones arrive with the first, no gap (ITL)."""
        self.burst_carry += self.burst
        k = int(self.burst_carry)
        self.burst_carry -= k
        if k > 1:
            self.itl_put(_pack(0.0, 0.0, k - 1, self.B))
        return k
