"""Decode side of an instance: joins, event-skipping runs in closed form, finishes, preemption."""

from __future__ import annotations

import heapq
from heapq import heappush

from pdplan.perf.step import BatchShape
from pdplan.sim._hosts import InstanceHost
from pdplan.sim.kernel import PRIO_BOUNDARY
from pdplan.sim.runs import RUN_PACK, RUN_PACK2
from pdplan.sim.state import DONE
from pdplan.sim.steps import steps_within

__all__ = ["DecodeMixin"]

_NONE: list[int] = []  # shared empty run_fresh (never mutated)
_pack = RUN_PACK  # 4 floats -> the 16 bytes of one ITL run record
_pack2 = RUN_PACK2  # two records at once


class DecodeMixin(InstanceHost):
    """Methods of Instance that move the decode batch (see design-notes s3)."""

    __slots__ = ()

    def _affine_of(self, b: int) -> tuple[float, float]:
        ac = self._affine.get(b)
        if ac is None:
            ac = self._affine[b] = self.model.decode_affine(b)
        return ac

    def _kinked_affine(self, b: int, n: int) -> tuple[float, float, int]:
        """(a, c) of the side of the kink C is on, and n cut so the run ends at the kink:
        C grows by b per step, so ceil((b * kink - C) / b) steps reach it."""
        K = b * self._kink
        below = self.C < K
        key = b if below else -b
        ac = self._affine.get(key)
        if ac is None:
            ac = self._affine[key] = self.model.decode_affine(b, self.C)
        if below:
            n = min(n, max(1, -(-(K - self.C) // b)))
        return ac[0], ac[1], n

    def _join_ready(self) -> None:
        """Requests in `ready` enter the running batch at boundary K (KV already reserved)."""
        r, k, ready = self.sim.req, self.K, self.ready
        while ready:
            rid = ready.popleft()
            g, o, ctx = r.gen[rid], r.out[rid], r.ctx0[rid]
            heappush(self.fin, (k + o - g, rid, ctx - k, o))  # see Instance.fin
            self.running[rid] = None
            self.B += 1
            self.C += ctx
            if g == 0 or rid in self.sim._evicted:  # no token yet, or back from a swap-out
                self.fresh.append(rid)
            elif self.stall:
                self.join_stall[rid] = self.stall

    def _cut(self) -> int:
        """Steps the batch will have completed at its next step boundary."""
        if not self.busy:
            return 0
        if self.in_run:
            dt = self.loop.now - self.tK
            if dt < 0.0 or not self.run_n:  # the run starts at tK, still ahead: that boundary
                return 0
            if self.run_n > 1:
                c = self.run_c
                return 1 + steps_within(dt, self.run_a, c * self.B, c * self.C)
        return 1

    def _admit_transfers(self) -> None:
        """Admit queued requests while KV and batch slots allow (FIFO, head-of-line). KV must
        fit with what the batch writes up to its next boundary plus one more step, in which the
        requests whose KV has arrived (`ready`: in exact mode they wait for that boundary; the
        event-skipping mode has them in the batch already) write too. A recompute victim
        waiting here for its KV comes first (see _victim_waits)."""
        if self.pq and self.role == "decode" and self._victim_waits():
            return None
        r, jq, cap, b = self.sim.req, self.jq, self.cap, self.B
        nxt = b + len(self.ready)  # tokens of the step after the boundary: the ones whose KV
        slots = self.spec.max_batch - (nxt + self.inflight + self.prefilling)  # is here join
        bound = b * (self.run_n if self.in_run else 1) + nxt if self.busy else nxt  # >= proj
        cut = -1
        admitted = False
        pre = self.sim._pre_wait  # decode_prealloc: queued for KV room before their prefill
        released: list[int] = []
        st = self.st  # tokens of recurrent state each sequence holds beside its KV
        wins = self.wins  # and, with sliding-window layers, their KV (Instance.seq_fixed)
        while jq and slots > 0:
            rid = jq[0]
            need = r.ctx0[rid]
            if wins:
                st = self.seq_fixed(rid)
            if self.kv_used + need + st + bound + 1 > cap:
                if cut < 0:
                    cut = self._cut()
                if self.kv_used + need + st + b * cut + nxt + 1 > cap:
                    break
            jq.popleft()
            admitted = True
            slots -= 1
            self.kv_used += need + st
            if self.swapped and rid in self.swapped:
                self._swap_in(rid, need)
            elif pre and rid in pre:  # room reserved: its prefill instance may start it
                pre.remove(rid)
                self.sim._pre_ok.add(rid)
                self.inflight += 1  # its KV arrives after its prefill
                r.xfer_start[rid] = self.loop.now  # its wait for a decode slot ends here
                released.append(rid)
            else:
                self.inflight += 1
                r.xfer_start[rid] = self.loop.now  # its wait for a decode slot ends here
                # self is this Instance (a mixin's self type cannot say so, see sim/_hosts)
                self._net_start(rid, self.sim.inst[r.p_inst[rid]], self, self._kvb(need))  # type: ignore[arg-type]
        if admitted and self.busy and self.in_run and self.kv_used + b * self.run_n > cap:
            n = max((cap - self.kv_used) // b, cut if cut >= 0 else self._cut())
            if n < self.run_n:
                self._schedule_run(n)  # re-plan: end the run before KV is full
        for rid in released:  # after this instance's own state is settled
            self.sim.inst[r.p_inst[rid]].submit_prefill(rid)
        return None

    def _victim_waits(self) -> bool:
        """A recompute victim queued on this decode instance (only victims queue to prefill
        here), its prefill not started, waits for KV: new transfers wait behind it. vLLM V1
        puts a preempted request back at the head of its FCFS waiting queue
        (Scheduler._preempt_request: waiting.prepend_request), where the remote-KV requests
        a decode instance admits queue too, and stops at a head whose blocks do not fit;
        SGLang's decode resumes retracted requests before it preallocates for new ones.
        Admitting transfers first starved a victim until arrivals stopped."""
        started = self._started
        return any(rid not in started for rid in self.pq)

    def _start_run(self) -> None:
        """Start a pure-decode run until the next internal event (finish / KV full)."""
        b, room = self.B, self.cap - self.kv_used  # room: KV tokens free
        if room < b:
            self._make_room()
            b, room = self.B, self.cap - self.kv_used
        if self.swap_s:
            return self._swap_step()  # pending swap copies block the run's first step
        if not b:
            return
        n = self.fin[0][0] - self.K
        n_mem = room // b
        if n_mem < n:
            n = n_mem if n_mem > 1 else 1
        if self._special:  # one flag for the rare plans (Instance.set_flags)
            a, c, n = self._plan_special(b, n)
        else:
            ac = self._affine.get(b)
            a, c = ac if ac is not None else self._affine_of(b)
        self.run_a, self.run_c, self.run_n = a, c, n
        self.busy = self.in_run = True
        first = a + c * self.C
        tK = self.tK
        # the first step's ITL is recorded at _close_run (merged with the rest when plain)
        fresh = self.fresh
        if not fresh:
            self.first_w, self.run_fresh = b, _NONE
        elif (
            len(fresh) == 1
            and fresh[0] in self.running
            and self.sim.req.gen[fresh[0]] == 0
            and self.burst == 1.0
        ):
            self.sim.req.first[fresh[0]] = tK + first  # _emit_fresh, inlined: a lone join
            self.first_w, self.run_fresh, self.fresh = b - 1, fresh, []
        else:
            self.first_w = b - self._emit_fresh(tK + first, first)
        self.first_stall, self.stall = self.stall, 0.0
        ver = self.ver = self.ver + 1
        t = tK + n * first + c * b * n * (n - 1) * 0.5  # T(n), design-notes s3
        heappush(self.heap, (t, PRIO_BOUNDARY, next(self.seq), self._wake_cb, ver))

    def _plan_special(self, b: int, n: int) -> tuple[float, float, int]:
        """(a, c, n) of a run that a poll, exact mode or a DSA kink shapes."""
        if self.inbox:  # stop where the scheduler next polls for the waiting arrivals
            n_poll = self.next_poll(self.K + 1) - self.K
            if n_poll < n:
                n = n_poll
        if self.exact:
            return self.model.step_time(BatchShape(0, 0.0, 0, b, self.C)), 0.0, 1
        if self._kink:  # piecewise affine (DSA top-k): end the run where the slope changes
            return self._kinked_affine(b, n)
        a, c = self._affine_of(b)
        return a, c, n

    def _schedule_run(self, n: int) -> None:
        """(Re)schedule the end of the current run after n steps from tK. n = 0 (a run split
        by LazyJoinMixin.deliver, cut before it starts): its fresh joins and stall wait for
        the run planned at that boundary, as in exact mode, where no step has begun there."""
        if not n:
            self.fresh.extend(self.run_fresh)
            self.run_fresh = _NONE
            self.stall += self.first_stall
            self.first_stall, self.first_w = 0.0, 0  # _close_run(0) records no gaps
        self.run_n = n
        self.ver += 1
        a, c = self.run_a, self.run_c
        t = n * (a + c * self.C) + c * self.B * n * (n - 1) * 0.5  # T(n), design-notes s3
        heappush(self.heap, (self.tK + t, PRIO_BOUNDARY, next(self.seq), self._wake_cb, self.ver))

    def _wake(self, ver: int) -> None:
        """End of a decode run: account it, let finished requests go, decide what is next."""
        if ver != self.ver:
            return  # superseded by an earlier boundary
        self.busy = False
        self._close_run(self.run_n, self.loop.now)
        fin = self.fin
        if fin and fin[0][0] <= self.K:
            self._pop_finished(self.K)
        # _decide, short-cut for a plain decode instance (not draining) with nothing else to do
        if self._plain and self.B and not (self.jq or self.ready or self.pq):
            self._start_run()
            if not self.busy:
                self.in_run = False
        else:
            self._decide()

    def _close_run(self, n: int, t_end: float) -> None:
        """Account the first n steps of the current run, which end at t_end: ITL runs (step k
        lasts a + c*(C + k*B) for B sequences; step 0 is no gap for the fresh joins and
        includes any stall; one run when neither applies), busy time, trace; advance K, C, KV."""
        a, c, b, st = self.run_a, self.run_c, self.B, self.first_stall
        lo = a + c * self.C
        if self.burst != 1.0:
            self._close_burst(n, lo, c * b, st)
        elif self.first_w == b and not st:
            self.itl_put(_pack(lo, lo + c * (n - 1) * b, n, b))
        else:
            w = self.first_w
            if n and self.join_stall:
                w -= self._joiner_gaps(lo + st)
            if w <= 0:
                if n > 1:
                    self.itl_put(_pack(lo + c * b, lo + c * (n - 1) * b, n - 1, b))
            elif n > 1:  # both runs: one pack and one append of their 32 bytes
                g = lo + st
                self.itl_put(_pack2(g, g, 1, w, lo + c * b, lo + c * (n - 1) * b, n - 1, b))
            else:
                self.itl_put(_pack(lo + st, lo + st, 1, w))
        self.busy_s += t_end - self.tK
        if self.tracer is not None:  # steps: a speculative one emits `burst` tokens, priced
            steps = n if self.burst == 1.0 else round(n / self.burst, 3)  # per token (n here)
            self.tracer.append((self.idx, "decode", self.tK, t_end - self.tK, steps, b))
        self.tK = t_end
        self.K += n
        nb = n * b
        self.C += nb
        self.kv_used += nb

    def _advance(self, n: int) -> None:
        """n decode steps done: context grows by B per step; pop requests that finished."""
        b = self.B
        K = self.K = self.K + n
        self.C += n * b
        self.kv_used += n * b
        if self.fin and self.fin[0][0] <= K:
            self._pop_finished(K)

    def _pop_finished(self, K: int) -> None:
        """Requests whose last token came at step <= K leave the batch. Open loop, disaggregated:
        Simulator.on_finish is inlined, its Little's-law and count updates made once."""
        fin = self.fin
        sim = self.sim
        r = sim.req
        now = self.tK
        inline = sim._times is not None and self.role == "decode"
        n = gone = 0
        while fin and fin[0][0] <= K:
            _, rid, base, o = heapq.heappop(fin)
            used = base + K  # its KV: ctx0 + (K - K at its join)
            self.C -= used
            st = self.seq_fixed(rid) if self.wins else self.st
            self.kv_used -= used + st  # its KV, its recurrent state and window layers
            if self.kv_full >= 0:  # its reservation (kv_reserve_output) is free again
                self.kv_full -= r.inp[rid] + r.out[rid] + st
            self.B -= 1
            del self.running[rid]
            r.gen[rid] = o
            if inline:
                r.finish[rid] = now
                r.state[rid] = DONE
                n += 1
                gone += o + r.inp[rid]  # its load: prompt + output tokens (Simulator._pair)
            else:
                sim.on_finish(rid, self, now)
        if n:
            sim.finished += n
            t = sim.t_left = sim.loop.now
            sim.area += sim.nsys * (t - sim._last_t)  # Little's law: integral of N(t) dt
            sim._last_t = t
            sim.nsys -= n
            self.outstanding -= gone
