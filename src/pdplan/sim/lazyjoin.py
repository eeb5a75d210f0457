"""Decode joins without an event at the step boundary: split or re-plan the running run."""

from __future__ import annotations

from heapq import heappush

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.kernel import PRIO_ARRIVAL
from pdplan.sim.steps import steps_within

__all__ = ["LazyJoinMixin"]


class LazyJoinMixin(InstanceHost):
    """A request whose KV arrives during a decode run joins at the run's next step boundary.
    The plain way schedules an event at that boundary (and leaves the run's old end stale).
    Here, when the boundary has nothing else to do, the run is split there at once: its
    first part is accounted as if it had ended, the newcomer joins, and the rest is planned
    from the boundary, which is the same state the event would have produced. The plain
    path stays for exact mode, no run, or a boundary with other work (admission queue,
    prompts, draining, a timeline sample, or too little KV, which means preemption)."""

    __slots__ = ()
    lazy_joins = True  # class switch: False makes every join wait for its boundary event

    def kick(self) -> None:
        """New work: start a step if idle, or cut the running decode run at the next boundary."""
        if self.offline:
            return
        if not self.busy:
            self.tK = self.loop.now
            self._decide()
        elif self.in_run:
            dt = self.loop.now - self.tK
            if dt < 0.0:  # the run starts at tK, still ahead (split by deliver): stop there
                if self.run_n:
                    self._schedule_run(0)
            elif self.run_n > 1:
                c = self.run_c
                m = steps_within(dt, self.run_a, c * self.B, c * self.C)
                if m + 1 < self.run_n:
                    self._schedule_run(m + 1)

    def deliver(self, rid: int) -> None:
        """KV of rid has arrived; it joins the batch at the next step boundary (lazily when
        the class docstring's conditions allow, else through kick() and an event)."""
        self.inflight -= 1
        self.ready.append(rid)
        if not self.busy:
            return self._poll_soon()
        # _lazy: a decode instance, not exact, draining or offline, lazy joins on (set_flags)
        if not (self.in_run and self._lazy) or self.jq or self.pq:
            return self.kick()
        now, b, tK = self.loop.now, self.B, self.tK
        new_b = b + len(self.ready)
        if now >= tK:  # mid-run: the next boundary is n1 steps after tK
            a, c = self.run_a, self.run_c
            n1 = 1 + steps_within(now - tK, a, c * b, c * self.C)
            if n1 >= self.run_n:
                return None  # the run ends at that boundary anyway; its _wake joins them
            t_b = tK + n1 * (a + c * self.C) + c * b * n1 * (n1 - 1) * 0.5  # T(n1)
            if self.kv_used + n1 * b + new_b > self.cap:
                return self.kick()
            self._close_run(n1, t_b)
        else:  # the current run starts at tK, still ahead: plan it again with the newcomer
            if self.kv_used + new_b > self.cap:
                return self.kick()
            self.fresh.extend(self.run_fresh)
            self.stall += self.first_stall
        if new_b == b + 1:  # _join_ready, inlined for the lone newcomer
            self.ready.popleft()
            r, k = self.sim.req, self.K
            g, o, ctx = r.gen[rid], r.out[rid], r.ctx0[rid]
            heappush(self.fin, (k + o - g, rid, ctx - k, o))  # see Instance.fin
            self.running[rid] = None
            self.B += 1
            self.C += ctx
            if g == 0 or rid in self.sim._evicted:  # no token yet, or back from a swap-out
                self.fresh.append(rid)
            elif self.stall:
                self.join_stall[rid] = self.stall
        else:
            self._join_ready()
        self._start_run()
        return None

    def _poll_soon(self) -> None:
        """An idle instance's next poll, later at this instant: every KV delivery that lands
        now joins its first step. Transfers of equal prompts from one prefill batch, sharing
        a link fairly, end at one instant, and an engine's scheduler polls its KV connector
        once per loop (vLLM get_finished, SGLang's decode transfer queue), seeing them all;
        starting on the first alone would put the others a whole step later. After the
        network's completions at this instant (PRIO_NETWORK < PRIO_ARRIVAL)."""
        if self.offline or self.poll_due:
            return
        self.poll_due = True
        heappush(self.heap, (self.loop.now, PRIO_ARRIVAL, next(self.seq), self._poll_now, 0))

    def _poll_now(self, _: int) -> None:
        self.poll_due = False
        if not (self.busy or self.offline):
            self.tK = self.loop.now
            self._decide()
