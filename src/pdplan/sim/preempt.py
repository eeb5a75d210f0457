"""Preemption when KV runs out mid-generation: evict the newest request (recompute or swap)."""

from __future__ import annotations

from heapq import heapify, heappush

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.kernel import PRIO_BOUNDARY
from pdplan.sim.runs import RUN_PACK

__all__ = ["PreemptMixin"]

_pack = RUN_PACK  # 4 floats -> the 16 bytes of one ITL run record


class PreemptMixin(InstanceHost):
    """Methods of Instance that make KV room by preemption and bring swapped requests back.

    Swap costs time: vLLM's scheduler (V0 swap preemption) hands the worker blocks_to_swap_out
    / blocks_to_swap_in with the step, and the worker copies them over PCIe before it runs the
    model, so the copy blocks that step. Each way takes KV bytes / (per-GPU PCIe B/s x GPUs
    that hold a distinct shard: InstanceSpec.senders, all of them unless the KV is replicated,
    e.g. an MLA latent; each moves its own in parallel). The time is gathered in `swap_s` and
    paid as a step of its own (_swap_step) before the instance's next step: nothing runs meanwhile,
    busy time counts it, and the waiting decodes' next gap (ITL, TPOT, E2E) includes it."""

    __slots__ = ()

    def _pcie_s(self, tokens: int) -> float:
        """s to move `tokens` of KV one way over the instance's PCIe links: bytes / (B/s),
        bytes window-capped with any fixed state (SimConfig.kv_bytes)."""
        return self.sim.cfg.kv_bytes(tokens) / (self.spec.pcie_bytes_per_s * self.spec.senders)

    def _swap_in(self, rid: int, need: int) -> None:
        """A swapped-out request's KV comes back over PCIe; it joins at the next boundary
        (the caller kicks the instance), after the swap-in step."""
        self.swapped.discard(rid)
        if self.kv_full >= 0:
            self.kv_full += self.sim.req.inp[rid] + self.sim.req.out[rid]
        self.swap_s += self._pcie_s(need)
        self.ready.append(rid)

    def _swap_step(self) -> None:
        """Pay the pending PCIe swap time as a blocking step from tK, then decide again."""
        s, self.swap_s = self.swap_s, 0.0
        self.busy, self.in_run = True, False
        if self.tracer is not None:
            self.tracer.append((self.idx, "swap", self.tK, s, 0, self.B))
        heappush(self.heap, (self.tK + s, PRIO_BOUNDARY, next(self.seq), self._end_swap, s))

    def _end_swap(self, s: float) -> None:
        now = self.loop.now
        self.busy = False
        self.busy_s += now - self.tK
        self.tK = now
        if self.B:
            self.stall += s  # the running decodes waited for the copy
        self._decide()

    def _make_room(self) -> None:
        """Before a step with B decodes: preempt the newest requests until B new tokens fit."""
        while self.B and self.kv_used + self.B > self.cap:
            self._preempt_newest()

    def _preempt_newest(self) -> None:
        """Evict the most recently joined running request (vLLM's victim choice)."""
        self._evict(next(reversed(self.running)))

    def _evict(self, rid: int) -> None:
        r, sim = self.sim.req, self.sim
        fin = self.fin  # drop its finish-heap entry, which holds ctx0 - (K at its join)
        i = next(i for i, e in enumerate(fin) if e[1] == rid)
        used = self.K + fin[i][2]
        done = used - r.ctx0[rid]
        fin[i] = fin[-1]
        fin.pop()
        heapify(fin)
        self.C -= used
        st = self.seq_fixed(rid) if self.wins else self.st
        self.kv_used -= used + st  # its KV, its recurrent state and window layers
        if self.kv_full >= 0:  # its reservation goes with it (taken again on re-admission)
            self.kv_full -= r.inp[rid] + r.out[rid] + st
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
            self._queue_recompute(rid, used)

    def _queue_recompute(self, rid: int, used: int) -> None:
        """Queue the victim's recompute: its `used` KV tokens and its last sampled token, whose
        KV no step has written yet, i.e. prompt + every output token so far. vLLM V1 sets
        num_computed_tokens = 0 (Scheduler._preempt_request), so it schedules num_tokens =
        prompt + output tokens, and the step that computes the last of them samples the next
        token (PrefillMixin._finish_chunks -> _recomputed); SGLang re-prefills a retracted
        request's origin_input_ids + output_ids alike. With a prefix cache it looks up its
        prompt's leading blocks like a new request (vLLM get_computed_blocks runs for a waiting
        request with no computed tokens; SGLang matches its radix tree; looked up now, as a
        new request is at routing). Its output tokens have no hashes in the workload: only
        prompt blocks can hit, and r.hit keeps the first prefill's hit."""
        r, sim = self.sim.req, self.sim
        hit = 0  # tokens
        if self.cache is not None and sim._hashes and self.role != "decode":
            blocks = self.cache.lookup(sim.wl.hashes(rid).tolist())  # (decode caches are empty)
            hit = min(blocks * sim.wl.block_tokens, r.inp[rid])  # < need: one to compute
        # tokens; below cap only where a disaggregated request fills its decode pool exactly
        # (its ledger holds inp + gen KV tokens, one more than an agg one's): that recompute
        # yields its last token, and with the admission's next-token slot it would never fit
        need = used + 1 if used + 2 <= self.fit else used
        r.todo[rid] = need - hit
        r.pdone[rid] = hit
        # first of the waiting prompts, behind the ones already being prefilled: those hold
        # their KV and run on (vLLM schedules its running partial prefills before the
        # waiting queue, at whose head a preempted request goes back); ahead of them a
        # victim that does not fit would stall the instance for good
        pq, started = self.pq, self._started
        i = 0
        while i < len(pq) and pq[i] in started:
            i += 1
        pq.insert(i, rid)

    def _recomputed(self, rid: int, now: float) -> None:
        """A recompute's last chunk ended at `now`: it samples the request's next token (vLLM V1
        and SGLang sample at the end of any prefill that reaches the last known token). Its
        gap runs from its last token before the (first) eviction; it is back in a batch now."""
        sim = self.sim
        sim.req.gen[rid] += 1
        t0 = sim._evicted.pop(rid)
        self.itl_put(_pack(now - t0, now - t0, 1, 1))
        out = sim._out_of_batch  # eviction -> back in the batch, s (api._time_averages)
        out[rid] = out.get(rid, 0.0) + max(0.0, now - t0)
