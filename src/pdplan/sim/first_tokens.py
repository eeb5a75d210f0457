"""First tokens and first gaps of an instance's batch: fresh joins, joins after a stall."""

from __future__ import annotations

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.runs import RUN_PACK

__all__ = ["FirstTokenMixin", "response_seen"]

_pack = RUN_PACK  # 4 floats -> the 16 bytes of one ITL run record


def response_seen(first: float, last: float, out: int, overhead_s: float, steps: float) -> float:
    """When a client has a whole response, s: its last token, or its first as the client sees
    it if that is later: `overhead_s` after the engine's first token plus `steps` decode steps,
    never past the last token (SimConfig.ttft_overhead_s / ttft_decode_steps; metrics counts
    the steps at the run's median TPOT, unknown until the run ends, so the request's own TPOT
    stands in here: exact where the steps reach the last token, the only case in which the
    first token reaches the client after the last). A closed-loop client sends its next
    request then."""
    lag = 0.0  # s, the steps' share of the first token's delay
    if steps and out > 1:
        lag = min(steps * (last - first) / (out - 1), last - first)
    return max(last, first + overhead_s + lag)


class FirstTokenMixin(InstanceHost):
    """Methods of Instance that record when a join's first token (or first gap) comes."""

    __slots__ = ()

    def _emit_fresh(self, t1: float, per_token: float = 0.0) -> int:
        """Fresh joins get their first token at t1 (end of the run's first step); a request
        back from a swap-out gets its next one, one gap from its last token before the
        eviction (recorded once: a re-planned run re-emits it without a second gap). On a
        speculative instance, whose run steps are priced per token (`per_token` s), the first
        token ends a whole step: the burst's tokens (at most its output) come together, so
        their per-token steps are owed as no gaps (burst_debt, BurstMixin._settle_debt)."""
        r, running, evicted = self.sim.req, self.running, self.sim._evicted
        emitted = [rid for rid in self.fresh if rid in running]
        burst = self.burst
        for rid in emitted:
            if r.gen[rid] == 0:
                with_first = min(burst, r.out[rid]) - 1.0  # per-token steps, tokens
                r.first[rid] = t1 + per_token * with_first
                if per_token and with_first > 0:  # their steps are no gaps (BurstMixin)
                    self.burst_debt[rid] = with_first
            elif rid in evicted:
                t0 = evicted.pop(rid)
                self.itl_put(_pack(t1 - t0, t1 - t0, 1, 1))
                out = self.sim._out_of_batch  # eviction -> back in the batch, s (api.py)
                out[rid] = out.get(rid, 0.0) + max(0.0, self.tK - t0)
        self.fresh.clear()
        self.run_fresh = emitted  # re-emitted if the run is re-planned before it starts
        return len(emitted)

    def _joiner_gaps(self, gap: float) -> int:
        """Record the first gaps of the requests in join_stall: `gap` (this step + the stall
        since the running decodes' last token) less the stall that passed before their first
        token; returns how many."""
        counts: dict[float, int] = {}
        for s0 in self.join_stall.values():
            counts[s0] = counts.get(s0, 0) + 1
        self.join_stall.clear()
        for s0, k in counts.items():
            self.itl_put(_pack(gap - s0, gap - s0, 1, k))
        return sum(counts.values())

    def _record_first_step(self, now: float, dur: float) -> None:
        """Mixed step: first token of fresh joins; the others' gap includes any stall."""
        w = self.B - (self._emit_fresh(now + dur) if self.fresh else 0)
        if self.join_stall:
            w -= self._joiner_gaps(dur + self.stall)
        if w > 0:
            self.itl_put(_pack(dur + self.stall, dur + self.stall, 1, w))
        self.stall = 0.0
