"""One serving instance: its state, arriving work and the choice of its next step."""

from __future__ import annotations

import math
from array import array
from collections import deque
from typing import TYPE_CHECKING

from pdplan.errors import ConfigError
from pdplan.sim.burst import BurstMixin
from pdplan.sim.cache import PrefixCache
from pdplan.sim.config import InstanceSpec
from pdplan.sim.decode import DecodeMixin
from pdplan.sim.first_tokens import FirstTokenMixin
from pdplan.sim.kv_shape import longest_fit, seq_state_tokens
from pdplan.sim.lazyjoin import LazyJoinMixin
from pdplan.sim.mixed import MixedStepMixin
from pdplan.sim.polling import PollMixin
from pdplan.sim.preempt import PreemptMixin
from pdplan.sim.prefill_steps import PrefillMixin
from pdplan.sim.sampling import SampleMixin
from pdplan.sim.steps import steps_within

if TYPE_CHECKING:
    from pdplan.sim.cluster import Simulator

__all__ = ["Instance", "steps_within"]


class Instance(
    BurstMixin,
    DecodeMixin,
    FirstTokenMixin,
    LazyJoinMixin,
    MixedStepMixin,
    PollMixin,
    PreemptMixin,
    PrefillMixin,
    SampleMixin,
):
    """State and scheduler of one instance. Decode steps are counted by K; between events the
    batch is constant and whole runs of steps are integrated in closed form (unless exact)."""

    # slots: 50+ attributes would overflow CPython's shared-key instance dicts (30 keys) and
    # make every self.x lookup a slow dict probe; slots keep attribute access specialised
    __slots__ = tuple(
        "B C K _affine _kink _end_pf_cb _kvb _lazy _net_start _pf_cache _plain _special _started "
        "burst burst_carry burst_debt "
        "_wake_cb busy busy_s cache cap ckpt draining exact fin first_stall first_w fresh gate "
        "gate_K "
        "gate_ranks gate_tokens heap holds idx "
        "in_run inbox inflight itl_put join_stall jq kv_full kv_used layerwise loop model "
        "next_role "
        "offline outstanding poll_K poll_due pq prefilling ready recv role "
        "run_a run_c run_fresh run_n "
        "running samples "
        "seq sim spec st stall swap_s swapped tK tracer ver fit wins ".split()
    )

    def __init__(self, idx: int, spec: InstanceSpec, sim: Simulator) -> None:
        self.idx, self.spec, self.sim, self.role = idx, spec, sim, spec.role
        self.model = spec.step_model
        self.cap = spec.kv_capacity_tokens
        # a sequence's fixed recurrent state in KV-pool tokens, charged to kv_used while it
        # holds KV here (0 without SSM / linear-attention layers); wins: its sliding-window
        # layers' charge (seq_fixed); fit: the most tokens one sequence may hold beside both
        # (a short one is charged only the window it fills: kv_shape.longest_fit)
        self.st = seq_state_tokens(sim.cfg, spec)
        self.wins = spec.kv_window_tokens
        self.fit = longest_fit(self.cap, self.st, self.wins)
        if self.fit < 1 and (self.st or self.wins):  # no request could ever run: say so
            held = f" (its recurrent state takes {self.st:,} per sequence)" if self.st else ""
            raise ConfigError(
                f"instance {spec.name or idx}: its KV pool of {self.cap:,} tokens cannot hold "
                f"a one-token sequence{held}, so no request could run there"
            )
        self.pq: deque[int] = deque()  # prompts to prefill (or recompute), head may be partial
        self.inbox: deque[int] = deque()  # arrived, not yet taken in (spec.recv_interval > 1)
        self.recv = spec.recv_interval
        self.gate = spec.ctx_gate  # TensorRT-LLM context gate (sim.gate), or None
        self.holds = self.recv > 1 or self.gate is not None  # arrivals wait in the inbox
        self.poll_K = 0  # decode step count K at the last take-in (PollMixin)
        self.poll_due = False  # an idle instance's poll is due at this instant (_poll_soon)
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
        # routing signal, tokens: prompt + output of each request an agg / decode instance
        # holds until it finishes (its KV then), the prompt on a prefill one until prefilled
        self.outstanding = 0
        self.busy_s = 0.0
        self.draining = False
        self.next_role: str | None = None
        self.offline = False
        # a hybrid model's cached prefix must end where a recurrent state was saved, and each
        # saved state takes its KV-pool tokens (st) of the cache (sim.cache.PrefixCache)
        blocks, state_blocks = spec.prefix_cache_blocks, self.st / sim.wl.block_tokens
        self.cache = PrefixCache(blocks, state_blocks) if blocks else None
        self.ckpt = self.cache is not None and state_blocks > 0  # chunk ends save states
        self._affine: dict[int, tuple[float, float]] = {}
        # per-sequence context where the model's decode step changes slope (DSA top-k), or 0
        self._kink = int(getattr(spec.step_model, "decode_kink", 0) or 0)
        # flat (t, queued, running, kv_used, state) every sample_interval_s; state: an index of
        # sim.metrics.SAMPLE_STATES (the role, or draining / switching for a role switch)
        self.samples = array("d")
        self.set_flags()

    def set_flags(self) -> None:
        """Flags the hot paths test instead of the settings and states behind them: `_lazy`,
        a decode join may split the running run (LazyJoinMixin.deliver); `_plain`, a decode
        instance that is not draining (DecodeMixin._wake's short-cut); `_special`, a run is
        planned the general way (exact steps, a DSA kink, or arrivals held for a poll).
        Called again whenever the role, draining or offline changes (SwitchingMixin)."""
        self._plain = self.role == "decode" and not self.draining
        self._lazy = self._plain and self.lazy_joins and not (self.exact or self.offline)
        self._special = bool(self.exact or self._kink or self.holds)

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
        # per fresh join (rid), the per-token steps whose tokens came with its first (BurstMixin)
        self.burst_debt: dict[int, float] = {}
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
        pq: deque[int] | None  # None: no prompt step now (swapped-out requests go first)
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
        st = self.seq_fixed(rid) if self.wins else self.st
        if self.kv_full >= 0 and self.kv_full + r.inp[rid] + r.out[rid] + st > self.cap:
            return False  # its whole output's KV is not free (kv_reserve_output)
        return self.kv_used + r.todo[rid] + r.pdone[rid] + st + self.B + nxt <= self.cap

    def seq_fixed(self, rid: int) -> int:
        """KV-pool tokens request rid holds here beside its own tokens: its recurrent state
        and its window layers' KV at its final length L = prompt + output, c * min(L, W) per
        window group (InstanceSpec.kv_window_tokens). Callers use self.st when no windows."""
        r = self.sim.req
        n = r.inp[rid] + r.out[rid]  # tokens
        return self.st + math.ceil(sum(c * (n if n < w else w) for w, c in self.wins))
