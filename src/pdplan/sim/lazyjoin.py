"""Decode joins without an event at the step boundary: split or re-plan the running run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.sim.steps import steps_within

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["LazyJoinMixin"]


class LazyJoinMixin:
    """A request whose KV arrives during a decode run joins at the run's next step boundary.
    The plain way schedules an event at that boundary (and leaves the run's old end stale).
    Here, when the boundary has nothing else to do, the run is split there at once: its
    first part is accounted as if it had ended, the newcomer joins, and the rest is planned
    from the boundary, which is the same state the event would have produced."""

    __slots__ = ()

    def deliver(self: Instance, rid: int) -> None:
        """KV of rid has arrived; it joins the batch at the next step boundary."""
        self.inflight -= 1
        self.ready.append(rid)
        if not self._join_lazily():
            self.kick()

    def _join_lazily(self: Instance) -> bool:
        """Split / re-plan the run for `ready`; False when the plain path must run instead:
        exact mode, no run, or a boundary with other work (admission queue, prompts,
        draining, a timeline sample, or too little KV, which means preemption)."""
        if not (self.busy and self.in_run) or self.exact or self.role != "decode":
            return False
        if self.jq or self.pq or self.draining or self.offline:
            return False
        now, b = self.loop.now, self.B
        new_b = b + len(self.ready)
        if now >= self.tK:  # mid-run: the next boundary is n1 steps after tK
            a, c = self.run_a, self.run_c
            n1 = 1 + steps_within(now - self.tK, a, c * b, c * self.C)
            if n1 >= self.run_n:
                return True  # the run ends at that boundary anyway; its _wake joins them
            t_b = self.tK + n1 * (a + c * self.C) + c * b * n1 * (n1 - 1) * 0.5  # T(n1)
            if t_b >= self._next_sample or self.kv_used + n1 * b + new_b > self.cap:
                return False
            self._close_run(n1, t_b)
        else:  # the current run starts at tK, still ahead: plan it again with the newcomer
            if self.kv_used + new_b > self.cap:
                return False
            self.fresh.extend(self.run_fresh)
            self.stall += self.first_stall
        self._join_ready()
        self._start_run()
        return True
