"""Decode side of an instance: joins, event-skipping runs in closed form, finishes, preemption."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from pdplan.perf.step import BatchShape
from pdplan.sim.kernel import PRIO_BOUNDARY
from pdplan.sim.steps import steps_within

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["DecodeMixin"]


class DecodeMixin:
    """Methods of Instance that move the decode batch (see design-notes s3)."""

    def _affine_of(self: Instance, b: int) -> tuple[float, float]:
        ac = self._affine.get(b)
        if ac is None:
            ac = self._affine[b] = self.model.decode_affine(b)
        return ac

    def _join(self: Instance, rid: int) -> None:
        """rid enters the running batch at boundary K with its KV (already reserved)."""
        r = self.sim.req
        ctx = r.ctx0[rid]
        left = r.out[rid] - r.gen[rid]
        r.k0[rid] = self.K
        heapq.heappush(self.fin, (self.K + left, rid, r.epoch[rid]))
        self.order.append(rid)
        self.running.add(rid)
        self.B += 1
        self.C += ctx
        if r.gen[rid] == 0:
            self.fresh.append(rid)

    def _admit_transfers(self: Instance) -> None:
        """Admit queued requests while KV and batch slots allow (FIFO, head-of-line)."""
        r, sim = self.sim.req, self.sim
        cut = 0
        if self.busy:  # KV the batch will have written by the next step boundary
            cut = 1
            if self.in_run and self.run_n > 1:
                cut += steps_within(
                    sim.loop.now - self.tK, self.run_a, self.run_c * self.B, self.run_c * self.C
                )
        proj = self.B * (cut + 1)  # ... plus the step after it
        admitted = False
        while self.jq:
            rid = self.jq[0]
            need = r.ctx0[rid]
            if self.B + self.inflight + len(self.ready) + self.prefilling >= self.spec.max_batch:
                return
            if self.kv_used + need + proj + 1 > self.cap:
                return
            self.jq.popleft()
            admitted = True
            self.kv_used += need
            if rid in self.swapped:
                self.swapped.discard(rid)
                self.stall += (
                    need
                    * sim.cfg.kv_bytes_per_token
                    / (self.spec.pcie_bytes_per_s * self.spec.gpus)
                )  # swap-in: KV bytes / PCIe bandwidth
                self.ready.append(rid)
                if not self.busy:
                    self.kick()
            else:
                self.inflight += 1
                sim.start_transfer(rid, self)
        if admitted and self.busy and self.in_run and cut < self.run_n:
            self._schedule_run(cut)  # re-plan the run against the smaller KV headroom

    def _make_room(self: Instance) -> None:
        """Before a step with B decodes: preempt the newest requests until B new tokens fit."""
        while self.B and self.kv_used + self.B > self.cap:
            self._preempt_newest()

    def _start_run(self: Instance) -> None:
        """Start a pure-decode run until the next internal event (finish / KV full)."""
        self._make_room()
        if not self.B:
            return
        fin = self.fin
        while fin[0][2] != self.sim.req.epoch[fin[0][1]]:
            heapq.heappop(fin)  # stale entry of a preempted request
        n = fin[0][0] - self.K
        n_mem = (self.cap - self.kv_used) // self.B
        if n_mem < n:
            n = max(n_mem, 1)
        if self.sim.cfg.exact:
            n = 1
            self.run_a = self.model.step_time(BatchShape(0, 0.0, 0, self.B, self.C))
            self.run_c = 0.0
        else:
            self.run_a, self.run_c = self._affine_of(self.B)
        self.busy = True
        self.in_run = True
        first = self.run_a + self.run_c * self.C
        self._record_first_step(self.tK, first)
        self._schedule_run(n)

    def _schedule_run(self: Instance, n: int) -> None:
        """(Re)schedule the end of the current run after n steps from tK."""
        self.run_n = n
        self.ver += 1
        a, c = self.run_a, self.run_c
        t = n * (a + c * self.C) + c * self.B * n * (n - 1) * 0.5  # T(n), design-notes s3
        self.sim.loop.schedule(self.tK + t, PRIO_BOUNDARY, self._wake, self.ver)

    def _wake(self: Instance, ver: int) -> None:
        if ver != self.ver:
            return  # superseded by an earlier boundary
        now = self.sim.loop.now
        n = self.run_n
        self.busy = False
        self.busy_s += now - self.tK
        self._record_rest(now, n)
        self.tK = now
        self._advance(n)
        if len(self.order) > 4 * self.B + 64:
            self.order = [x for x in self.order if x in self.running]
        self._decide()

    def _record_first_step(self: Instance, now: float, dur: float) -> None:
        """First token of fresh joins; the first ITL gap of the others includes any stall."""
        r = self.sim.req
        t1 = now + dur
        fresh = 0
        running = self.running
        for rid in self.fresh:
            if r.gen[rid] == 0 and rid in running:
                r.first[rid] = t1
                fresh += 1
        self.fresh.clear()
        w = self.B - fresh
        if w > 0:
            self.sim.itl.add(dur + self.stall, dur + self.stall, 1, w)
        self.stall = 0.0

    def _record_rest(self: Instance, now: float, n: int) -> None:
        """ITL runs of steps 2..n of the run: durations linear in k (weights B each)."""
        if n > 1:
            a, c = self.run_a, self.run_c
            d1 = a + c * (self.C + self.B)
            dn = a + c * (self.C + (n - 1) * self.B)
            self.sim.itl.add(d1, dn, n - 1, self.B)
        if self.sim.tracer is not None:
            self.sim.tracer.append((self.idx, "decode", self.tK, now - self.tK, n, self.B))

    def _advance(self: Instance, n: int) -> None:
        """n decode steps done: context grows by B per step; pop requests that finished."""
        b = self.B
        self.K += n
        self.C += n * b
        self.kv_used += n * b
        fin, K, r = self.fin, self.K, self.sim.req
        while fin and fin[0][0] <= K:
            _k_end, rid, ep = heapq.heappop(fin)
            if ep != r.epoch[rid]:
                continue
            used = r.ctx0[rid] + (K - r.k0[rid])
            self.C -= used
            self.kv_used -= used
            self.B -= 1
            self.running.discard(rid)
            r.gen[rid] = r.out[rid]
            self.sim.on_finish(rid, self, self.tK)

    def _preempt_newest(self: Instance) -> None:
        """Evict the most recently joined running request (vLLM's victim choice)."""
        while True:
            rid = self.order.pop()
            if rid in self.running:
                break
        self._evict(rid)

    def _evict(self: Instance, rid: int) -> None:
        r, sim = self.sim.req, self.sim
        done = self.K - r.k0[rid]
        used = r.ctx0[rid] + done
        self.C -= used
        self.kv_used -= used
        self.B -= 1
        self.running.discard(rid)
        r.gen[rid] += done
        r.epoch[rid] += 1
        r.preempt[rid] += 1
        sim.preemptions += 1
        if sim.cfg.preemption == "swap":
            self.stall += (
                used * sim.cfg.kv_bytes_per_token / (self.spec.pcie_bytes_per_s * self.spec.gpus)
            )  # swap-out: KV bytes / PCIe bandwidth
            r.ctx0[rid] = used
            self.swapped.add(rid)
            self.jq.appendleft(rid)
        else:  # recompute: its prompt + generated tokens are prefilled again here
            r.todo[rid] = used
            r.pdone[rid] = 0
            self.pq.appendleft(rid)
