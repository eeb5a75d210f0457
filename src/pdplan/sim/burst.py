"""Speculative instances (perf.spec_decode): steps priced per token, tokens in bursts."""

from __future__ import annotations

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.runs import RUN_PACK

__all__ = ["BurstMixin"]

_pack = RUN_PACK  # 4 floats -> the 16 bytes of one ITL run record


class BurstMixin(InstanceHost):
    """Methods of Instance for a step model that emits `burst` > 1 tokens a decode step."""

    __slots__ = ()

    def _close_burst(self, n: int, lo: float, slope: float, st: float) -> None:
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
        if m <= 0:
            return
        hi = (lo + slope * (n - 1)) * e
        owed = self._settle_debt(m)  # fresh joins whose first burst's tokens came together
        for z, k in (*owed, (0.0, b - sum(k for _, k in owed))):
            g = m - z  # of the m per-token steps, those whose tokens come as gaps
            if k > 0 and g > 0:
                put(_pack((lo + slope * (first + z)) * e, hi, g / e, k))
                put(_pack(0.0, 0.0, m - g / e, k))
            elif k > 0:
                put(_pack(0.0, 0.0, m, k))

    def _settle_debt(self, m: int) -> list[tuple[float, int]]:
        """Pay m per-token steps of the fresh joins' debt (FirstTokenMixin._emit_fresh: a
        join's first token ends a whole step, its min(burst, out) - 1 tokens come with it, no
        gap). Returns (steps paid, joins) groups; a join gone (finished, preempted) is dropped.
        Without this a join's tokens got (out - 1) per-token gaps in only (out - burst)
        per-token steps of time: ITL's mean ran (out - 1) / (out - burst) x TPOT's."""
        debt, running = self.burst_debt, self.running
        paid: dict[float, int] = {}
        for rid, d in list(debt.items()):
            if rid not in running:
                del debt[rid]
                continue
            z = min(d, float(m))
            paid[z] = paid.get(z, 0) + 1
            if d - z <= 1e-9:
                del debt[rid]
            else:
                debt[rid] = d - z
        return list(paid.items())

    def _burst_tokens(self) -> int:
        """Tokens each decode of a speculative instance gets from a mixed step, priced whole
        (perf.spec_decode): `burst` on average, as whole tokens (the fraction carried over);
        the extra ones arrive with the first, no gap (ITL)."""
        self.burst_carry += self.burst
        k = int(self.burst_carry)
        self.burst_carry -= k
        if k > 1:
            self.itl_put(_pack(0.0, 0.0, k - 1, self.B))
        return k
