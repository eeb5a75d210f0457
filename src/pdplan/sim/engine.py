"""One serving instance: prefill batching, chunked / prefill-first mixing, event-skipping decode."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from pdplan.perf.step import BatchShape, causal_pairs
from pdplan.sim.cache import PrefixCache
from pdplan.sim.config import InstanceSpec
from pdplan.sim.decode import DecodeMixin
from pdplan.sim.kernel import PRIO_BOUNDARY
from pdplan.sim.steps import steps_within

if TYPE_CHECKING:
    from pdplan.sim.cluster import Simulator

__all__ = ["Instance", "steps_within"]


class Instance(DecodeMixin):
    """State and scheduler of one instance. Decode steps are counted by K; between events the
    batch is constant and whole runs of steps are integrated in closed form (unless exact)."""

    def __init__(self, idx: int, spec: InstanceSpec, sim: Simulator) -> None:
        self.idx, self.spec, self.sim, self.role = idx, spec, sim, spec.role
        self.model = spec.step_model
        self.cap = spec.kv_capacity_tokens
        self.pq: deque[int] = deque()  # prompts to prefill (or recompute), head may be partial
        self.jq: deque[int] = deque()  # waiting for KV admission (disagg decode, swapped out)
        self.ready: deque[int] = deque()  # KV present, join the batch at the next boundary
        self.swapped: set[int] = set()
        self.fresh: list[int] = []  # joined without a first token yet (disaggregated decode)
        self.fin: list[tuple[int, int, int]] = []  # (K_end, rid, epoch)
        self.order: list[int] = []  # join order; the newest running request is the victim
        self.running: set[int] = set()
        self.K, self.tK, self.B, self.C = 0, 0.0, 0, 0
        self.kv_used = 0  # tokens reserved or written
        self.inflight = 0  # KV transfers into this instance
        self.prefilling = 0  # prompts started but not finished
        self._started: set[int] = set()  # prompts with KV reserved here
        self.busy = False
        self.in_run = False
        self.run_n, self.run_a, self.run_c, self.ver = 0, 0.0, 0.0, 0
        self.stall = 0.0  # prefill / swap time since the running decodes' last token, s
        self.outstanding = 0  # tokens assigned and not yet served (routing signal)
        self.busy_s = 0.0
        self.draining = False
        self.next_role: str | None = None
        self.offline = False
        self.cache = PrefixCache(spec.prefix_cache_blocks) if spec.prefix_cache_blocks else None
        self._affine: dict[int, tuple[float, float]] = {}
        self.samples: list[tuple[float, int, int, int]] = []  # (t, queued, running, kv_used)
        self._next_sample = 0.0

    # ---- work arriving ---------------------------------------------------------------------
    def submit_prefill(self, rid: int) -> None:
        """A prompt to prefill here."""
        self.pq.append(rid)
        self.kick()

    def offer(self, rid: int) -> None:
        """A prefilled request whose KV should move here (decode admission queue)."""
        self.jq.append(rid)
        self._admit_transfers()

    def deliver(self, rid: int) -> None:
        """KV of rid has arrived; it joins the batch at the next step boundary."""
        self.inflight -= 1
        self.ready.append(rid)
        self.kick()

    def release(self, tokens: int) -> None:
        """Free KV held for a transferred prompt (prefill role)."""
        self.kv_used -= tokens
        if self.pq or self.draining:
            self.kick()

    def kick(self) -> None:
        """New work: start a step if idle, or cut the running decode run at the next boundary."""
        if self.offline:
            return
        if not self.busy:
            self.tK = self.sim.loop.now
            self._decide()
        elif self.in_run and self.run_n > 1:
            m = steps_within(
                self.sim.loop.now - self.tK, self.run_a, self.run_c * self.B, self.run_c * self.C
            )
            if m + 1 < self.run_n:
                self._schedule_run(m + 1)

    # ---- scheduling ------------------------------------------------------------------------
    def _decide(self) -> None:
        """At a step boundary (time tK): admit, then start the next step or go idle."""
        sim = self.sim
        if self.jq:
            self._admit_transfers()
        while self.ready:
            self._join(self.ready.popleft())
        now = self.tK
        if now >= self._next_sample:
            self._sample(now)
        role = self.role
        if self.B and self.kv_used + self.B > self.cap:
            self._make_room()
        if role == "prefill":
            self._prefill_step(self.spec.chunk_budget)
        elif role == "agg" and self.spec.chunk_budget is not None and self.pq:
            self._mixed_step()
        elif self.pq and self._head_admissible():
            self._prefill_step(None)
        elif self.B:
            self._start_run()
        if not self.busy:
            self.in_run = False
            if self.draining:
                sim.check_drained(self)

    def _head_admissible(self) -> bool:
        rid = self.pq[0]
        if rid in self._started:
            return True
        r = self.sim.req
        if self.B + self.prefilling >= self.spec.max_batch:
            return False
        return self.kv_used + r.todo[rid] + r.pdone[rid] + self.B + 1 <= self.cap

    def _sample(self, now: float) -> None:
        self.samples.append((now, len(self.pq) + len(self.jq), self.B, self.kv_used))
        self._next_sample = now + self.sim.cfg.sample_interval_s

    # ---- prefill ---------------------------------------------------------------------------
    def _take_prompts(self, budget: int, chunk: bool, max_seqs: int) -> list[tuple[int, int, int]]:
        """Prompt pieces for one step: [(rid, new_tokens, cached_tokens)] within `budget`."""
        r, sim = self.sim.req, self.sim
        batch: list[tuple[int, int, int]] = []
        left = budget
        for rid in self.pq:
            if left <= 0 or len(batch) >= max_seqs:
                break
            if rid not in self._started:
                if self.B + self.prefilling >= self.spec.max_batch:
                    break
                need = r.todo[rid] + r.pdone[rid]
                if self.kv_used + need + self.B + 1 > self.cap:  # room for its next token
                    break
                self.kv_used += need
                self._started.add(rid)
                self.prefilling += 1
                sim.on_prefill_start(rid, self)
            todo = r.todo[rid]
            take = min(todo, left) if chunk else todo
            if not chunk and batch and take > left:
                break
            batch.append((rid, take, r.pdone[rid]))
            left -= take
        return batch

    def _prefill_step(self, chunk_budget: int | None) -> None:
        """A prefill-only step (prefill role, prefill-first agg, or a recompute on decode)."""
        spec = self.spec
        budget = chunk_budget if chunk_budget is not None else spec.prefill_token_budget
        batch = self._take_prompts(budget, chunk_budget is not None, spec.max_batch)
        if not batch:
            if self.B:
                self._start_run()
            return
        toks = sum(b[1] for b in batch)
        pairs = sum(causal_pairs(n, c) for _, n, c in batch)
        dur = self.model.step_time(BatchShape(toks, pairs, len(batch)))
        now = self.tK
        if self.B:
            self.stall += dur  # prefill-first: running decodes wait for this step
        self._begin(now, dur, "prefill", toks)
        self.sim.on_prefill_batch(self, batch, now, now + dur)
        self.sim.loop.schedule(now + dur, PRIO_BOUNDARY, self._end_prefill, batch)

    def _end_prefill(self, batch: list[tuple[int, int, int]]) -> None:
        now = self.sim.loop.now
        self.busy = False
        self.busy_s += now - self.tK
        self.tK = now
        self._finish_chunks(batch, now)
        self._decide()

    def _finish_chunks(self, batch: list[tuple[int, int, int]], now: float) -> None:
        r, sim = self.sim.req, self.sim
        for rid, n, _ in batch:
            r.todo[rid] -= n
            r.pdone[rid] += n
            if r.todo[rid] == 0:
                if self.pq[0] == rid:
                    self.pq.popleft()
                else:
                    self.pq.remove(rid)
                self._started.discard(rid)
                self.prefilling -= 1
                r.ctx0[rid] = r.pdone[rid]
                if self.role == "prefill":
                    sim.on_prefill_done(rid, self, now)
                    continue
                if r.gen[rid] == 0:  # aggregated: the prefill step emits the first token
                    r.gen[rid] = 1
                    sim.on_first_token(rid, now)
                if r.gen[rid] >= r.out[rid]:
                    self.kv_used -= r.ctx0[rid]
                    sim.on_finish(rid, self, now)
                else:
                    self.ready.append(rid)

    # ---- mixed (chunked prefill) step ------------------------------------------------------
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
            self._advance(1)
        self._finish_chunks(batch, now)
        self._decide()

    def _begin(self, now: float, dur: float, kind: str, toks: int) -> None:
        self.busy = True
        self.in_run = False
        if self.sim.tracer is not None:
            self.sim.tracer.append((self.idx, kind, now, dur, toks, self.B))
