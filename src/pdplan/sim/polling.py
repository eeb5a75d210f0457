"""Scheduler polling: arrivals are taken in only every recv decode steps (SGLang
--scheduler-recv-interval), at once after a prompt step or when no decode runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.sim.steps import steps_within

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["PollMixin"]


class PollMixin:
    """Methods of Instance for the recv interval (see InstanceSpec.recv_interval)."""

    __slots__ = ()

    def next_poll(self: Instance, k: int) -> int:
        """The first decode step count >= k at which the scheduler polls for arrivals: every
        recv decode steps from the last poll at poll_K (SGLang's recv skipper counter)."""
        return self.poll_K - (self.poll_K - k) // self.recv * self.recv

    def _cut_at_poll(self: Instance) -> None:
        """End the running decode run at the boundary where the scheduler next polls."""
        c = self.run_c
        m = steps_within(self.loop.now - self.tK, self.run_a, c * self.B, c * self.C)
        n = self.next_poll(self.K + m + 1) - self.K
        if n < self.run_n:
            self._schedule_run(n)

    def _take_in(self: Instance) -> None:
        """At a boundary: take in the arrived requests if the scheduler polls here (every recv
        decode steps; at once after a step with prompts, or with no decodes running)."""
        if not self.B or (self.K - self.poll_K) % self.recv == 0:
            self.pq.extend(self.inbox)
            self.inbox.clear()
            self.poll_K = self.K
