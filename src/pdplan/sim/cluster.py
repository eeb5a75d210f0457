"""The cluster simulator: arrivals, routing, prefill -> KV transfer -> decode, role switches."""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable
from heapq import heappush

import numpy as np

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.arrivals import Arrivals
from pdplan.sim.config import SimConfig
from pdplan.sim.engine import Instance
from pdplan.sim.first_tokens import response_seen
from pdplan.sim.handoff import HandoffMixin
from pdplan.sim.kernel import PRIO_ARRIVAL, PRIO_CONTROL, PRIO_SAMPLE, EventLoop
from pdplan.sim.network import Network
from pdplan.sim.route_prefill import PrefillRouteMixin
from pdplan.sim.routing import Router
from pdplan.sim.runs import RunLog
from pdplan.sim.state import DONE, DROPPED, RUNNING, Detours, Requests
from pdplan.sim.switching import SwitchingMixin
from pdplan.workload.core import Workload

__all__ = ["Arrivals", "Simulator"]


# Timeline ticks with no event in between and no step running repeat one state: past this
# many, the sampler jumps to the last tick before the next event, so an idle gap in a trace
# (or a day-long transfer) costs two samples, not millions.
SAMPLE_SKIP = 1000


class Simulator(HandoffMixin, PrefillRouteMixin, SwitchingMixin):
    """Wires instances, router, network and metrics together; `run()` then `result()`."""

    __slots__ = tuple(
        "_d_fit_all _evicted _frozen_ticks _out_of_batch _fe _fe_free _hashes _heap _last_t "
        "_least_pair _least_route _need_max _next _parked _detours _pending_roles _pre_ok "
        "_pre_wait _prealloc_on _seq _sent _tail "
        "_times _times_l _unrouted _until area arrivals cap_limit cfg d_cands d_cap_min "
        "drop_reasons dropped finished inst itl loop n_issued_max net "
        "nsys p_cands pairer preemptions req pf_caches router switch_log t_left tracer wl ".split()
    )

    def __init__(self, cfg: SimConfig, wl: Workload, arrivals: Arrivals | None = None) -> None:
        self.cfg, self.wl = cfg, wl
        self.arrivals = arrivals or Arrivals()
        self.loop = EventLoop()
        self._heap, self._seq = self.loop.heap, self.loop.seq
        self.req = Requests(wl.input_len, wl.output_len)
        need = self.req.column("inp").astype(np.int64) + self.req.column("out")
        self._need_max = int(need.max()) if len(need) else 0  # most prompt + output tokens
        self.itl = RunLog()
        self.tracer: list[tuple] | None = [] if cfg.trace else None
        self.pf_caches: dict[int, dict] = {}  # id(step model) -> prefill step-time memo
        self.net = Network(self)  # before the instances, which bind its start()
        self.inst = [Instance(i, s, self) for i, s in enumerate(cfg.instances)]
        self.router, self.pairer = Router(cfg.routing, cfg.seed), Router(cfg.pairing, cfg.seed + 1)
        self._least_pair = cfg.pairing == "least_tokens"
        self._least_route = cfg.routing == "least_tokens"
        self.preemptions = self.finished = self.dropped = 0
        self.drop_reasons: dict[str, int] = {}
        self.switch_log: list[tuple[float, int, str]] = []
        self.nsys, self.area, self._last_t = 0, 0.0, 0.0
        fe = (cfg.frontend_s, cfg.frontend_token_s)
        self._fe, self._fe_free = (fe if any(fe) else None), 0.0
        self._unrouted: deque[int] = deque()
        self._parked: dict[int, float] = {}  # prefilled, no decode instance to go to: rid ->
        # when it parked (handoff)
        self._detours = Detours()  # parked / restarted requests, for the time averages
        # layer-wise: KV whose bytes all left before its chunked prefill ended: rid ->
        # (prefill instance, decode instance, s its last byte left); handoff
        self._sent: dict[int, tuple[Instance, Instance, float]] = {}
        self._tail: dict[int, int] = {}  # layer-wise: rid -> tokens its last prefill step
        # computed, whose last layer's KV can leave only after that step (handoff)
        self._pending_roles: dict[int, str] = {}  # instance -> role asked for mid-switch
        # decode_prealloc (handoff.pre_pair): queued on their decode instance for KV room /
        # given it, their KV not yet sent
        self._prealloc_on = cfg.decode_prealloc
        self._pre_wait: set[int] = set()
        self._pre_ok: set[int] = set()
        self._evicted: dict[int, float] = {}  # preempted rid -> its last token's time, s
        self._out_of_batch: dict[int, float] = {}  # rid -> s evicted, until back in a batch
        self._frozen_ticks = 0  # policy ticks in a row with nothing in flight (switching)
        self._hashes = (
            wl.hash_offsets is not None and any(s.prefix_cache_blocks for s in cfg.instances)
        ) or (wl.hash_offsets is not None and cfg.routing == "prefix")
        self._refresh_candidates()
        self._times = self.arrivals.times(wl, cfg.seed)
        self.n_issued_max = len(wl) if self._times is None else len(self._times)
        self._next = 0
        self._until = math.inf
        self.t_left = 0.0  # s, when a request last left the system (finished or dropped)
        self._start()

    # ---- setup -----------------------------------------------------------------------------
    def _start(self) -> None:
        sched = self.loop.schedule
        if self._times is None:
            c = min(int(self.arrivals.concurrency or 1), self.n_issued_max)
            for _ in range(c):
                self._issue(0.0)
        elif self.n_issued_max:
            # fast scalar access; built from the float64 bytes (not numpy scalar by scalar)
            self._times_l = memoryview(array("d", self._times.tobytes()))
            sched(self._times_l[0], PRIO_ARRIVAL, self._arrive_chain, 0)
        for sw in self.cfg.switches:
            sched(sw.time_s, PRIO_CONTROL, self._begin_switch, sw)
        pol = self.cfg.policy
        if pol is not None:
            sched(pol.interval_s, PRIO_CONTROL, self._policy_tick, None)
        sched(0.0, PRIO_SAMPLE, self._sample_tick, None)

    def _sample_tick(self, _: object) -> None:
        """Every instance's timeline sample at this instant, then the next one
        sample_interval_s on while requests are left and other events pending."""
        now, dt = self.loop.now, self.cfg.sample_interval_s
        for inst in self.inst:
            inst.sample(now)
        if self.loop.heap and self.finished + self.dropped < self.n_issued_max:
            gap = self.loop.peek_time() - now  # s to the next event of any kind
            if gap > SAMPLE_SKIP * dt and not any(i.busy for i in self.inst):
                # a long quiet stretch (no step running): its samples would all repeat this
                # one; resume on the grid at the last tick before the next event
                now += math.floor(gap / dt) * dt - dt
            self.loop.schedule(now + dt, PRIO_SAMPLE, self._sample_tick, None)

    def _refresh_candidates(self) -> None:
        ok = [i for i in self.inst if not i.draining and not i.offline]
        self.p_cands = [i for i in ok if i.role in ("prefill", "agg")]
        self.d_cands = [i for i in ok if i.role == "decode"]
        self.d_cap_min = min((i.fit for i in self.d_cands), default=0)  # tokens (HandoffMixin)
        self._d_fit_all = self.d_cap_min >= self._need_max  # every request fits every one
        # prompt + output must fit the KV (tokens) of the instance that decodes it. _pair and
        # the agg router (PrefillRouteMixin._fitting) choose one that holds it, so the limit
        # is the largest pool: '1D:tp4@a100-40gb+1D:tp4' holds what its larger instance does
        # (the smallest pool's limit dropped those). One draining to prefill does not count;
        # while none is there or coming (all switching), any may become one: the largest
        dec = [i.fit for i in self.inst if _decodes(i)]  # KV room of one sequence beside its state
        self.cap_limit = max(dec) if dec else max(i.fit for i in self.inst)

    def _too_long(self) -> str:
        """The drop reason of a request longer than the largest KV pool it could decode in."""
        dec = [i for i in self.inst if _decodes(i)] or self.inst
        big = min((i for i in dec if i.fit == self.cap_limit), key=lambda i: i.idx)
        name, cap = big.spec.name or big.idx, f"{self.cap_limit:,} tokens"
        if big.st:  # a hybrid model's recurrent state takes part of the pool per sequence
            cap += f" beside its recurrent state's {big.st:,}"
        role = "" if big.role == "agg" else f"{big.role} "
        if len({i.fit for i in dec}) > 1:  # pools differ in size: it exceeds every one
            return f"prompt + output exceed every {role}instance's KV capacity ({name}'s {cap})"
        return f"prompt + output exceed the KV capacity of one {role}instance {name} ({cap})"

    def _issue(self, t: float) -> None:
        """Closed loop: the next request in workload order is sent at t."""
        if self._next < self.n_issued_max:
            rid = self._next
            self._next += 1
            self.loop.schedule(t, PRIO_ARRIVAL, self._arrive, rid)

    def _arrive_chain(self, rid: int) -> None:
        """Open-loop arrivals in time order. Those due before any other event (and within
        the run's `until`) are taken in this one call instead of one heap event each."""
        times, heap, loop, nmax = self._times_l, self._heap, self.loop, self.n_issued_max
        r, plain = self.req, self._fe is None
        while True:
            self._next = rid + 1
            if plain:  # _arrive, inlined: no API-server queue in between
                now = loop.now
                r.arrival[rid] = now
                r.state[rid] = RUNNING
                self.area += self.nsys * (now - self._last_t)  # Little's law, as in _arrive
                self._last_t = now
                self.nsys += 1
                self._enter(rid)
            else:
                self._arrive(rid)
            rid += 1
            if rid >= nmax:
                return
            t = times[rid]
            top = heap[0] if heap else None
            if t > self._until or (
                top and (top[0] < t or (top[0] == t and top[1] <= PRIO_ARRIVAL))
            ):
                heappush(heap, (t, PRIO_ARRIVAL, next(self._seq), self._arrive_chain, rid))
                return
            loop.now = t
            loop.events_run += 1

    # ---- request path ----------------------------------------------------------------------
    def _count(self, delta: int) -> None:
        now = self.loop.now
        self.area += self.nsys * (now - self._last_t)  # Little's law: integral of N(t) dt
        self._last_t = now
        self.nsys += delta

    def _arrive(self, rid: int) -> None:
        r, now = self.req, self.loop.now
        r.arrival[rid] = now
        r.state[rid] = RUNNING
        self.area += self.nsys * (now - self._last_t)  # Little's law: integral of N(t) dt
        self._last_t = now
        self.nsys += 1
        fe = self._fe
        if fe is not None:  # the API server takes requests one at a time (SimConfig.frontend_s)
            t = max(now, self._fe_free) + fe[0] + fe[1] * r.inp[rid]
            self._fe_free = t
            heappush(self._heap, (t, PRIO_ARRIVAL, next(self._seq), self._enter, rid))
            return None
        return self._enter(rid)

    def _enter(self, rid: int) -> None:
        """The request reaches the engines: check it fits, route it to a prefill / agg queue."""
        r, now = self.req, self.loop.now
        i, o = r.inp[rid], r.out[rid]
        if i < 1 or o < 1:
            return self._drop(rid, "empty prompt or output")
        if i + o > self.cap_limit:
            return self._drop(rid, self._too_long())
        cands = self.p_cands
        if not cands:
            self._unrouted.append(rid)
            return None
        if self._hashes or not self._least_route:
            self._route(rid)
            return None
        rt = self.router  # _route + Router.least + submit_prefill, inlined (plain routing)
        s = rt._tie
        if s >= len(cands):
            s = 0
        rt._tie = s + 1
        inst: Instance | None  # None: _fitting found none
        inst = cands[s]
        low = inst.outstanding
        for c in cands:
            if c.outstanding < low:
                inst, low = c, c.outstanding
        need = i + (o if inst.role == "agg" else 0)  # tokens: an agg instance decodes it too
        if need > inst.fit:  # too long for it: the least loaded of those it fits, if any
            inst = self._fitting(cands, need)
            if inst is None:
                return self._drop(rid, "prompt exceeds every prefill instance's KV capacity")
        r.p_inst[rid] = inst.idx
        r.todo[rid] = i
        inst.outstanding += i + (o if inst.role == "agg" else 0)
        if self._prealloc_on:  # its decode instance reserves its KV before it is prefilled
            self.pre_pair(rid, inst)
            return None
        if inst.holds:
            inst.submit_prefill(rid)
            return None
        inst.pq.append(rid)
        if not inst.busy:
            if not inst.offline:
                inst.tK = now
                inst._decide()
        elif inst.in_run:
            inst.kick()  # cut the decode run at its next boundary
        return None

    def _drop(self, rid: int, why: str) -> None:
        self.req.state[rid] = DROPPED
        self.dropped += 1
        self.t_left = self.loop.now
        self.drop_reasons[why] = self.drop_reasons.get(why, 0) + 1
        self._count(-1)
        if self._times is None:
            self._issue(self.loop.now + self.arrivals.think_s)

    def on_finish(self, rid: int, inst: InstanceHost, now: float) -> None:
        r = self.req
        r.finish[rid] = now
        r.state[rid] = DONE
        self.finished += 1
        t = self.t_left = self.loop.now
        self.area += self.nsys * (t - self._last_t)  # Little's law: integral of N(t) dt
        self._last_t = t
        self.nsys -= 1
        inst.outstanding -= r.out[rid] + r.inp[rid]  # what routing / pairing added (agg, D)
        if self._times is None:  # the client has the whole response when it has seen the
            # last token, and the first, which the client-side first-token delay holds back
            cfg = self.cfg
            seen = response_seen(r.first[rid], now, int(r.out[rid]), cfg.ttft_overhead_s,
                                 cfg.ttft_decode_steps)  # fmt: skip
            self._issue(seen + self.arrivals.think_s)

    def release(self) -> None:
        """Drop the request arrays and instances once results are collected."""
        self.req = None  # type: ignore[assignment]
        self.inst = self.p_cands = self.d_cands = []

    # ---- driving ---------------------------------------------------------------------------
    def run(
        self, until: float = math.inf, progress: Callable[[int, int], None] | None = None
    ) -> None:
        """Run to completion (or `until` seconds); progress(done, total) every ~50k events."""
        loop = self.loop
        self._until = until
        if progress is None and until == math.inf:
            loop.run()  # all events in one tight loop
        while len(loop) and loop.peek_time() <= until:
            loop.run(until, max_events=50_000)
            if progress is not None:
                progress(self.finished + self.dropped, self.n_issued_max)
        if until != math.inf:
            loop.now = max(loop.now, until)
        self._count(0)


def _decodes(inst: Instance) -> bool:
    """inst decodes requests now or after its pending switch (not one draining to prefill)."""
    if inst.next_role is not None:
        return inst.next_role == "decode"
    return inst.role in ("decode", "agg")
