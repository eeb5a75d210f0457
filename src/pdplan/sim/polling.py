"""Scheduler polling and context gates: arrivals are taken in only every recv decode steps
(SGLang --scheduler-recv-interval), or when a TensorRT-LLM context gate opens (sim.gate), at
once after a prompt step or when no decode runs."""

from __future__ import annotations

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.gate import gate_rank
from pdplan.sim.steps import steps_within

__all__ = ["PollMixin"]


class PollMixin(InstanceHost):
    """Methods of Instance for the recv interval (InstanceSpec.recv_interval) and the context
    gate (InstanceSpec.ctx_gate). poll_K: the decode step count at the last take-in (for a
    "batch" gate: when the first waiting prompt arrived); gate_K: the step from which a
    "balance" gate opens because every DP rank holds a prompt, -1 while not; gate_tokens: the
    waiting prompts' tokens (a "batch" gate opens when they and the decodes reach its tokens,
    checked at every boundary, as the decodes change)."""

    __slots__ = ()

    def next_poll(self, k: int) -> int:
        """The first decode step count >= k at which the waiting arrivals are taken in: every
        recv decode steps from the last poll at poll_K (SGLang's recv skipper counter), or
        where the context gate opens."""
        g = self.gate
        if g is None:
            return self.poll_K - (self.poll_K - k) // self.recv * self.recv
        t = g.timeout_steps
        if g.kind == "batch":  # enough tokens (the decodes' too, as they stand now), or the
            if self.gate_tokens + self.B >= g.tokens:  # timeout counted from the first waiting
                return k
            return max(k, self.poll_K + t)
        if self.B < g.ranks:
            return k  # some DP rank runs no decode: TensorRT-LLM releases at once
        if self.gate_K >= 0:
            return max(k, self.gate_K)
        return self.poll_K - (self.poll_K - k) // t * t  # free-running, reset at each release

    def _steps_now(self) -> int:
        """Decode steps done by now: K plus the whole steps of the running run so far."""
        if not (self.busy and self.in_run and self.run_n > 1):
            return self.K
        dt = self.loop.now - self.tK
        if dt <= 0.0:
            return self.K
        c = self.run_c
        return self.K + steps_within(dt, self.run_a, c * self.B, c * self.C)

    def _gate_arrival(self, rid: int) -> None:
        """A prompt joins the inbox: start the batch wait, or note its DP rank / its tokens."""
        g = self.gate
        if g is None or (g.kind == "balance" and self.gate_K >= 0):
            return
        if g.kind == "batch":  # next_poll weighs the tokens against the running decodes
            if len(self.inbox) == 1:
                self.poll_K = self._steps_now()
            self.gate_tokens += int(self.sim.req.inp[rid])
            return
        self.gate_ranks.add(gate_rank(rid, g.ranks))
        if len(self.gate_ranks) >= g.ranks:
            self.gate_K = self._steps_now() + g.wait_steps

    def _cut_at_poll(self) -> None:
        """End the running decode run at the boundary where the scheduler next polls."""
        c = self.run_c
        m = steps_within(self.loop.now - self.tK, self.run_a, c * self.B, c * self.C)
        n = self.next_poll(self.K + m + 1) - self.K
        if n < self.run_n:
            self._schedule_run(n)

    def _take_in(self) -> None:
        """At a boundary: take in the arrived requests if the scheduler polls here (every recv
        decode steps, or the gate opens; at once after a step with prompts, or with no decodes
        running)."""
        if not self.B or self.next_poll(self.K) == self.K:
            self.poll_K = self.K
            self.gate_K, self.gate_tokens = -1, 0
            self.gate_ranks.clear()
            self.pq.extend(self.inbox)
            self.inbox.clear()
