"""One serving instance: prefill batching, chunked / prefill-first mixing, event-skipping decode."""

from __future__ import annotations

from array import array
from collections import deque
from heapq import heappush
from typing import TYPE_CHECKING

from pdplan.perf.step import BatchShape
from pdplan.sim.burst import BurstMixin
from pdplan.sim.cache import PrefixCache
from pdplan.sim.config import InstanceSpec
from pdplan.sim.decode import DecodeMixin
from pdplan.sim.kernel import PRIO_BOUNDARY
from pdplan.sim.lazyjoin import LazyJoinMixin
from pdplan.sim.mixed import MixedStepMixin
from pdplan.sim.polling import PollMixin
from pdplan.sim.preempt import PreemptMixin
from pdplan.sim.sampling import SampleMixin
from pdplan.sim.steps import steps_within

if TYPE_CHECKING:
    from pdplan.sim.cluster import Simulator

__all__ = ["Instance", "steps_within"]


class Instance(
    BurstMixin, DecodeMixin, LazyJoinMixin, MixedStepMixin, PollMixin, PreemptMixin, SampleMixin
):
    """State and scheduler of one instance. Decode steps are counted by K; between events the
    batch is constant and whole runs of steps are integrated in closed form (unless exact)."""

    # slots: 50+ attributes would overflow CPython's shared-key instance dicts (30 keys) and
    # make every self.x lookup a slow dict probe; slots keep attribute access specialised
    __slots__ = tuple(
        "B C K _affine _kink _end_pf_cb _kvb _net_start _pf_cache _started burst burst_carry "
        "_wake_cb busy busy_s cache cap draining exact fin first_stall first_w fresh gate gate_K "
        "gate_ranks gate_tokens heap holds idx "
        "in_run inbox inflight itl_put join_stall jq kv_full kv_used layerwise loop model "
        "next_role "
        "offline outstanding poll_K pq prefilling ready recv role run_a run_c run_fresh run_n "
        "running samples "
        "seq sim spec stall swap_s swapped tK tracer ver ".split()
    )

    def __init__(self, idx: int, spec: InstanceSpec, sim: Simulator) -> None:
        self.idx, self.spec, self.sim, self.role = idx, spec, sim, spec.role
        self.model = spec.step_model
        self.cap = spec.kv_capacity_tokens
        self.pq: deque[int] = deque()  # prompts to prefill (or recompute), head may be partial
        self.inbox: deque[int] = deque()  # arrived, not yet taken in (spec.recv_interval > 1)
        self.recv = spec.recv_interval
        self.gate = spec.ctx_gate  # TensorRT-LLM context gate (sim.gate), or None
        self.holds = self.recv > 1 or self.gate is not None  # arrivals wait in the inbox
        self.poll_K = 0  # decode step count K at the last take-in (PollMixin)
        self.gate_K, self.gate_tokens = -1, 0  # the gate's early opening step, waiting tokens
        self.gate_ranks: set[int] = set()  # DP ranks holding a waiting prompt
        self.jq: deque[int] = deque()  # waiting for KV admission (disagg decode, swapped out)
        self.ready: deque[int] = deque()  # KV present, join the batch at the next boundary
        self.swapped: set[int] = set()
        self.fresh: list[int] = []  # joined without a first token yet (disaggregated decode)
        # running requests: (K at its last token, rid, ctx0 - K at its join, output tokens)
        self.fin: list[tuple[int, int, int, int]] = []
        # in join order (a dict keeps it): the newest running request is the victim
        self.running: dict[int, None] = {}
        self.K, self.tK, self.B, self.C = 0, 0.0, 0, 0
        self.kv_used = 0  # tokens reserved or written
        # prompt + whole output of the admitted requests (spec.kv_reserve_output), else -1
        self.kv_full = 0 if spec.kv_reserve_output else -1
        self.inflight = 0  # KV transfers into this instance
        self.prefilling = 0  # prompts started but not finished
        self._started: set[int] = set()  # prompts with KV reserved here
        self.busy = False
        self.in_run = False
        self.run_n, self.run_a, self.run_c, self.ver = 0, 0.0, 0.0, 0
        self.first_w, self.first_stall = 0, 0.0  # the current run's first-step ITL weight, stall
        self.run_fresh: list[int] = []  # requests whose first token ends the run's first step
        self._bind(sim)
        self.stall = 0.0  # prefill / swap time since the running decodes' last token, s
        # joined after a stall began (a prompt finished between prefill-first steps): rid ->
        # the stall then, which passed before its first token and is not in its next gap, s
        self.join_stall: dict[int, float] = {}
        self.swap_s = 0.0  # PCIe swap time not yet paid (PreemptMixin._swap_step), s
        self.outstanding = 0  # tokens assigned and not yet served (routing signal)
        self.busy_s = 0.0
        self.draining = False
        self.next_role: str | None = None
        self.offline = False
        self.cache = PrefixCache(spec.prefix_cache_blocks) if spec.prefix_cache_blocks else None
        self._affine: dict[int, tuple[float, float]] = {}
        # per-sequence context where the model's decode step changes slope (DSA top-k), or 0
        self._kink = int(getattr(spec.step_model, "decode_kink", 0) or 0)
        # flat (t, queued, running, kv_used, state) every sample_interval_s; state: an index of
        # sim.metrics.SAMPLE_STATES (the role, or draining / switching for a role switch)
        self.samples = array("d")

    def _bind(self, sim: Simulator) -> None:
        """Settings, shared objects and bound methods cached for the hot paths."""
        self.exact = sim.cfg.exact
        self.layerwise = sim.cfg.transfer_mode == "layerwise"
        # prefill step times memoised per step model, shared by the instances that use it
        self._pf_cache: dict[tuple[float, float, int], float] = sim.pf_caches.setdefault(
            id(self.model), {}
        )
        self.loop = sim.loop
        self.heap, self.seq = sim.loop.heap, sim.loop.seq  # direct pushes (see EventLoop)
        self._wake_cb, self._end_pf_cb = self._wake, self._end_prefill  # bound once
        self.tracer = sim.tracer
        self.itl_put = sim.itl.put  # appends RUN_PACK(lo, hi, n, w) bytes
        # tokens a decode step emits at once: > 1 when the step model decodes speculatively
        # (perf.spec_decode; its steps are priced per token, DecodeMixin._close_burst)
        self.burst = float(getattr(getattr(self.model, "spec", None), "tokens_per_step", 1.0))
        self.burst_carry = 0.0
        self._net_start, self._kvb = sim.net.start, sim.cfg.kv_bytes_fn()  # kv_bytes(tokens), B

    # ---- work arriving ---------------------------------------------------------------------
    def submit_prefill(self, rid: int) -> None:
        """A prompt to prefill here."""
        if self.holds and self.busy:  # taken in at the next poll (_take_in)
            self.inbox.append(rid)
            self._gate_arrival(rid)
            if self.in_run:
                self._cut_at_poll()
            return
        self.pq.append(rid)
        if not self.busy and not self.offline:
            self.tK = self.loop.now
            self._decide()
        elif self.in_run:
            self.kick()  # cut the decode run at its next boundary

    # ---- scheduling ------------------------------------------------------------------------
    def _decide(self) -> None:
        """At a step boundary (time tK): admit, then start the next step or go idle."""
        if self.inbox:
            self._take_in()
        if self.jq:
            self._admit_transfers()
        if self.ready:
            self._join_ready()
        evicted = False  # KV freed after the admission above, with transfers still waiting
        if self.B and self.kv_used + self.B > self.cap:
            self._make_room()
            evicted = bool(self.jq)
        role, pq = self.role, self.pq
        if pq and self.swapped and self.B and role == "agg":
            pq = None  # swapped-out requests come back before new prompts (vLLM V0 schedules
            # no prefill while any is swapped); with no decode running they could wait forever
        if self.swap_s:
            self._swap_step()  # swap copies block the step (vLLM): pay them first
        elif role == "prefill":
            self._prefill_step(self.spec.chunk_budget)
        elif pq and role == "agg" and self.spec.chunk_budget is not None:
            self._mixed_step()
        elif pq and self._head_admissible():
            self._prefill_step(None)
        elif self.B:
            self._start_run()
            if evicted and self.in_run and self.run_n > 1:
                # the queue is next looked at one step on (as in exact mode), not at the run's
                # end: the freed KV may now admit it
                self._schedule_run(1)
        if not self.busy:
            self.in_run = False
            if self.draining:
                self.sim.check_drained(self)

    def _head_admissible(self) -> bool:
        rid = self.pq[0]
        if rid in self._started:
            return True
        r = self.sim.req
        if self.B + self.prefilling >= self.spec.max_batch:
            return False
        nxt = self.role != "prefill"  # its next token's slot, unless its KV leaves
        if self.kv_full >= 0 and self.kv_full + r.inp[rid] + r.out[rid] > self.cap:
            return False  # its whole output's KV is not free (kv_reserve_output)
        return self.kv_used + r.todo[rid] + r.pdone[rid] + self.B + nxt <= self.cap

    # ---- prefill ---------------------------------------------------------------------------
    def _take_prompts(self, budget: int, chunk: bool, max_seqs: int) -> list[tuple[int, int, int]]:
        """Prompt pieces for one step: [(rid, new_tokens, cached_tokens)] within `budget`.
        A prompt reserves its KV (and its prefill starts) when it first enters a step."""
        r = self.sim.req
        todo_a, pdone_a, started, role = r.todo, r.pdone, self._started, self.role
        batch: list[tuple[int, int, int]] = []
        left = budget
        for rid in self.pq:
            if left <= 0 or len(batch) >= max_seqs:
                break
            todo, done = todo_a[rid], pdone_a[rid]
            if chunk:
                take = todo if todo < left else left
            elif batch and todo > left:
                break
            else:
                take = todo
            if rid not in started:
                if self.B + self.prefilling >= self.spec.max_batch:
                    break
                if self.kv_used + todo + done + self.B + (role != "prefill") > self.cap:
                    break  # + its next token, unless its KV leaves for a decode instance
                if self.kv_full >= 0:  # kv_reserve_output: its whole output must fit too
                    full = r.inp[rid] + r.out[rid]
                    if self.kv_full + full > self.cap:
                        break
                    self.kv_full += full
                self.kv_used += todo + done
                started.add(rid)
                self.prefilling += 1
                ps = r.pf_start[rid]
                if ps != ps:  # NaN: its first chunk starts now
                    r.pf_start[rid] = self.tK
            batch.append((rid, take, done))
            left -= take
        return batch

    def _prefill_step(self, chunk_budget: int | None) -> None:
        """A prefill-only step (prefill role, prefill-first agg, or a recompute on decode)."""
        spec = self.spec
        if not self.pq:
            if self.B:
                self._start_run()
            return
        # prompts fill the step's token budget and the last is cut to fit (SGLang's chunked
        # prefill, vLLM / TensorRT-LLM's token budget on a prefill instance)
        budget = chunk_budget if chunk_budget is not None else spec.prefill_token_budget
        batch = self._take_prompts(budget, True, spec.max_batch)
        if not batch:
            if self.B:
                self._start_run()
            return
        toks = pairs = 0.0
        for _, n, c in batch:
            toks += n
            pairs += n * c + n * (n + 1) * 0.5  # causal_pairs(n, c), inlined
        key = (toks, pairs, len(batch))
        dur = self._pf_cache.get(key)
        if dur is None:
            dur = self._prefill_time(key)
        now = self.tK
        if self.B:
            self.stall += dur  # prefill-first: running decodes wait for this step
        self.busy, self.in_run = True, False  # _begin, inlined
        if self.tracer is not None:
            self.tracer.append((self.idx, "prefill", now, dur, int(toks), self.B))
        if self.layerwise:
            self.sim.on_prefill_batch(self, batch, now, now + dur)
        heappush(self.heap, (now + dur, PRIO_BOUNDARY, next(self.seq), self._end_pf_cb, batch))

    def _prefill_time(self, key: tuple[float, float, int]) -> float:
        """Step time of a pure prefill step, memoised per (tokens, pairs, seqs)."""
        if len(self._pf_cache) >= 1 << 16:
            self._pf_cache.clear()  # bound memory on long runs
        shape = BatchShape(int(key[0]), key[1], key[2])
        dur = self._pf_cache[key] = self.model.step_time(shape)
        return dur

    def _end_prefill(self, batch: list[tuple[int, int, int]]) -> None:
        now = self.sim.loop.now
        self.busy = False
        if self.gate is None:
            self.poll_K = self.K  # a prefill step makes the scheduler poll at once
        self.busy_s += now - self.tK
        self.tK = now
        if len(batch) > 1:
            net = self.sim.net
            net.hold()  # KV of all prompts of the batch starts moving at once: reshare once
            self._finish_chunks(batch, now)
            net.flush()
        else:
            self._finish_chunks(batch, now)
        if (  # _decide, short-cut for a plain prefill instance (an inbox needs _take_in)
            self.role == "prefill"
            and not (self.jq or self.ready or self.B or self.draining or self.inbox)
        ):
            if self.pq:
                self._prefill_step(self.spec.chunk_budget)
            if not self.busy:
                self.in_run = False
        else:
            self._decide()

    def _finish_chunks(self, batch: list[tuple[int, int, int]], now: float) -> None:
        r, sim, pq = self.sim.req, self.sim, self.pq
        todo, pdone, gen = r.todo, r.pdone, r.gen
        for rid, n, _ in batch:
            left = todo[rid] = todo[rid] - n
            done = pdone[rid] = pdone[rid] + n
            if left:
                continue
            if pq[0] == rid:
                pq.popleft()
            else:
                pq.remove(rid)
            self._started.discard(rid)
            self.prefilling -= 1
            r.ctx0[rid] = done
            if self.cache is not None and sim._hashes and self.role != "decode":
                # blocks are reusable once computed (vLLM APC, SGLang radix cache); a chunked
                # prompt's blocks go in at its last chunk, not chunk by chunk
                self.cache.insert(sim.wl.hashes(rid).tolist())
            if gen[rid] == 0 and self.role != "decode":  # the prompt's own prefill, not a
                r.pf_end[rid] = now  # recompute (after a token, or on the decode side)
            if self.role == "prefill":  # prefill done: pair it with a decode instance
                self.outstanding -= r.inp[rid]
                if r.d_inst[rid] < 0:
                    sim._pair(rid, self, r)
                continue
            if gen[rid] == 0:  # aggregated (or a decode-side recompute before its first
                gen[rid] = 1  # token): the prefill step emits the first token
                r.first[rid] = now
                if sim._evicted:  # its next gap runs from this token, not the eviction
                    sim._evicted.pop(rid, None)
            if gen[rid] >= r.out[rid]:
                self.kv_used -= done
                sim.on_finish(rid, self, now)
            else:
                self.ready.append(rid)
