"""Preemption when KV runs out mid-generation: evict the newest request (recompute or swap)."""

from __future__ import annotations

from heapq import heapify, heappush
from typing import TYPE_CHECKING

from pdplan.sim.kernel import PRIO_BOUNDARY

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["PreemptMixin"]


class PreemptMixin:
    """Methods of Instance that make KV room by preemption and bring swapped requests back.

    Swap costs time: vLLM's scheduler (V0 swap preemption) hands the worker blocks_to_swap_out
    / blocks_to_swap_in with the step, and the worker copies them over PCIe before it runs the
    model, so the copy blocks that step. Each way takes KV bytes / (per-GPU PCIe B/s x GPUs
    that hold a distinct shard: InstanceSpec.senders, all of them unless the KV is replicated,
    e.g. an MLA latent; each moves its own in parallel). The time is gathered in `swap_s` and
    paid as a step of its own (_swap_step) before the instance's next step: nothing runs meanwhile,
    busy time counts it, and the waiting decodes' next gap (ITL, TPOT, E2E) includes it."""

    __slots__ = ()

    def _pcie_s(self: Instance, tokens: int) -> float:
        """s to move `tokens` of KV one way over the instance's PCIe links: bytes / (B/s),
        bytes window-capped with any fixed state (SimConfig.kv_bytes)."""
        return self.sim.cfg.kv_bytes(tokens) / (self.spec.pcie_bytes_per_s * self.spec.senders)

    def _swap_in(self: Instance, rid: int, need: int) -> None:
        """A swapped-out request's KV comes back over PCIe; it joins at the next boundary
        (the caller kicks the instance), after the swap-in step."""
        self.swapped.discard(rid)
        if self.kv_full >= 0:
            self.kv_full += self.sim.req.inp[rid] + self.sim.req.out[rid]
        self.swap_s += self._pcie_s(need)
        self.ready.append(rid)

    def _swap_step(self: Instance) -> None:
        """Pay the pending PCIe swap time as a blocking step from tK, then decide again."""
        s, self.swap_s = self.swap_s, 0.0
        self.busy, self.in_run = True, False
        if self.tracer is not None:
            self.tracer.append((self.idx, "swap", self.tK, s, 0, self.B))
        heappush(self.heap, (self.tK + s, PRIO_BOUNDARY, next(self.seq), self._end_swap, s))

    def _end_swap(self: Instance, s: float) -> None:
        now = self.loop.now
        self.busy = False
        self.busy_s += now - self.tK
        self.tK = now
        if self.B:
            self.stall += s  # the running decodes waited for the copy
        self._decide()

    def _make_room(self: Instance) -> None:
        """Before a step with B decodes: preempt the newest requests until B new tokens fit."""
        while self.B and self.kv_used + self.B > self.cap:
            self._preempt_newest()

    def _preempt_newest(self: Instance) -> None:
        """Evict the most recently joined running request (vLLM's victim choice)."""
        self._evict(next(reversed(self.running)))

    def _evict(self: Instance, rid: int) -> None:
        r, sim = self.sim.req, self.sim
        fin = self.fin  # drop its finish-heap entry, which holds ctx0 - (K at its join)
        i = next(i for i, e in enumerate(fin) if e[1] == rid)
        used = self.K + fin[i][2]
        done = used - r.ctx0[rid]
        fin[i] = fin[-1]
        fin.pop()
        heapify(fin)
        self.C -= used
        self.kv_used -= used
        if self.kv_full >= 0:  # its reservation goes with it (taken again on re-admission)
            self.kv_full -= r.inp[rid] + r.out[rid]
        self.B -= 1
        del self.running[rid]
        r.gen[rid] += done
        r.preempt[rid] += 1
        sim.preemptions += 1
        # its last token (the first eviction's, if evicted again before a new one): the gap to
        # its next spans the eviction
        sim._evicted.setdefault(rid, self.tK)
        self.join_stall.pop(rid, None)
        if sim.cfg.preemption == "swap":
            self.swap_s += self._pcie_s(used)  # swap-out, paid before the next step
            r.ctx0[rid] = used
            self.swapped.add(rid)
            self.jq.appendleft(rid)
        else:  # recompute: its prompt + generated tokens are prefilled again here
            r.todo[rid] = used
            r.pdone[rid] = 0
            # first of the waiting prompts, behind the ones already being prefilled: those hold
            # their KV and run on (vLLM schedules its running partial prefills before the
            # waiting queue, at whose head a preempted request goes back); ahead of them a
            # victim that does not fit would stall the instance for good
            pq, started = self.pq, self._started
            i = 0
            while i < len(pq) and pq[i] in started:
                i += 1
            pq.insert(i, rid)
