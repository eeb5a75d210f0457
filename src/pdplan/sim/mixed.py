"""Aggregated instances with chunked prefill: mixed steps of running decodes + prompt chunks."""

from __future__ import annotations

from pdplan.perf.step import BatchShape, causal_pairs
from pdplan.sim._hosts import InstanceHost
from pdplan.sim.kernel import PRIO_BOUNDARY

__all__ = ["MixedStepMixin"]


class MixedStepMixin(InstanceHost):
    """Methods of Instance for vLLM-style chunked prefill (agg role with a chunk budget)."""

    __slots__ = ()

    def _mixed_step(self) -> None:
        """vLLM-style chunked prefill: all running decodes plus prompt chunks up to the budget."""
        self._make_room()
        budget = int(self.spec.chunk_budget or 0) - self.B
        batch = self._take_prompts(budget, True, self.spec.max_batch) if budget > 0 else []
        if not batch:
            if self.B:
                self._start_run()
            return
        toks = sum(b[1] for b in batch)
        pairs = sum(causal_pairs(n, c) for _, n, c in batch)
        shape = BatchShape(toks, pairs, len(batch), self.B, self.C)
        dur = self.model.step_time(shape)
        now = self.tK
        if self.B:
            self._record_first_step(now, dur)
        self._begin(now, dur, "mixed", toks)
        self.sim.on_prefill_batch(self, batch, now, now + dur)
        self.sim.loop.schedule(now + dur, PRIO_BOUNDARY, self._end_mixed, batch)

    def _end_mixed(self, batch: list[tuple[int, int, int]]) -> None:
        now = self.sim.loop.now
        self.busy = False
        self.busy_s += now - self.tK
        self.tK = now
        if self.B:
            self._advance(1 if self.burst == 1.0 else self._burst_tokens())
        if self.gate is None:  # (a gate's counter runs on: PollMixin)
            self.poll_K = self.K  # a step with prompts makes the scheduler poll at once
        self._finish_chunks(batch, now)
        self._decide()

    def _begin(self, now: float, dur: float, kind: str, toks: int) -> None:
        self.busy = True
        self.in_run = False
        if self.sim.tracer is not None:
            self.sim.tracer.append((self.idx, kind, now, dur, toks, self.B))
