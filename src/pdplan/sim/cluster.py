"""The cluster simulator: arrivals, routing, prefill -> KV transfer -> decode, role switches."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pdplan.errors import ConfigError
from pdplan.sim.config import RoleSwitch, SimConfig
from pdplan.sim.engine import Instance
from pdplan.sim.kernel import PRIO_ARRIVAL, PRIO_CONTROL, PRIO_NETWORK, EventLoop
from pdplan.sim.network import Network
from pdplan.sim.routing import Router
from pdplan.sim.runs import RunLog
from pdplan.sim.state import DONE, DROPPED, RUNNING, Requests
from pdplan.workload.core import Workload

__all__ = ["Arrivals", "Simulator"]


@dataclass(frozen=True)
class Arrivals:
    """How requests enter: "trace" (the workload's timestamps), "poisson" (open loop at
    `rate` req/s, seeded), or "closed" (`concurrency` clients, each sends its next request
    `think_s` after its previous one finishes; what fixed-concurrency benchmarks measure).
    `duration_s`: only requests arriving before it are sent (open loop)."""

    mode: str = "trace"
    rate: float | None = None
    concurrency: int | None = None
    think_s: float = 0.0
    duration_s: float | None = None

    def times(self, wl: Workload, seed: int) -> np.ndarray | None:
        """Arrival times for open-loop modes (None for closed loop)."""
        if self.mode == "closed":
            if not self.concurrency or self.concurrency < 1:
                raise ConfigError("closed-loop arrivals need concurrency >= 1")
            return None
        if self.mode == "poisson":
            if not self.rate or self.rate <= 0:
                raise ConfigError("poisson arrivals need rate > 0 (requests/s)")
            gaps = np.random.default_rng(seed).exponential(1.0 / self.rate, len(wl))
            t = np.cumsum(gaps)
        elif self.mode == "trace":
            if wl.arrival_s is None:
                raise ConfigError("the workload has no timestamps; give a rate or concurrency")
            t = np.asarray(wl.arrival_s, dtype=np.float64)
        else:
            raise ConfigError(f"unknown arrival mode {self.mode!r}; trace, poisson or closed")
        if self.duration_s is not None:
            t = t[t < self.duration_s]
        return t


class Simulator:
    """Wires instances, router, network and metrics together; `run()` then `result()`."""

    def __init__(self, cfg: SimConfig, wl: Workload, arrivals: Arrivals | None = None) -> None:
        self.cfg, self.wl = cfg, wl
        self.arrivals = arrivals or Arrivals()
        self.loop = EventLoop()
        self.req = Requests(wl.input_len, wl.output_len)
        self.inst = [Instance(i, s, self) for i, s in enumerate(cfg.instances)]
        self.net = Network(self)
        self.router, self.pairer = Router(cfg.routing, cfg.seed), Router(cfg.pairing, cfg.seed + 1)
        self.itl = RunLog()
        self.tracer: list[tuple] | None = [] if cfg.trace else None
        self.preemptions = self.finished = self.dropped = 0
        self.drop_reasons: dict[str, int] = {}
        self.switch_log: list[tuple[float, int, str]] = []
        self.nsys, self.area, self._last_t = 0, 0.0, 0.0
        self._unrouted: deque[int] = deque()
        self._hashes = (
            wl.hash_offsets is not None and any(s.prefix_cache_blocks for s in cfg.instances)
        ) or (wl.hash_offsets is not None and cfg.routing == "prefix")
        self._refresh_candidates()
        self._times = self.arrivals.times(wl, cfg.seed)
        self.n_issued_max = len(wl) if self._times is None else len(self._times)
        self._next = 0
        self._start()

    # ---- setup -----------------------------------------------------------------------------
    def _start(self) -> None:
        sched = self.loop.schedule
        if self._times is None:
            c = min(int(self.arrivals.concurrency or 1), self.n_issued_max)
            for _ in range(c):
                self._issue(0.0)
        elif self.n_issued_max:
            sched(float(self._times[0]), PRIO_ARRIVAL, self._arrive_chain, 0)
        for sw in self.cfg.switches:
            sched(sw.time_s, PRIO_CONTROL, self._begin_switch, sw)
        pol = self.cfg.policy
        if pol is not None:
            sched(pol.interval_s, PRIO_CONTROL, self._policy_tick, None)

    def _refresh_candidates(self) -> None:
        ok = [i for i in self.inst if not i.draining and not i.offline]
        self.p_cands = [i for i in ok if i.role in ("prefill", "agg")]
        self.d_cands = [i for i in ok if i.role == "decode"]
        self.cap_limit = min((i.cap for i in self.inst if i.role in ("decode", "agg")), default=0)

    def _issue(self, t: float) -> None:
        """Closed loop: the next request in workload order is sent at t."""
        if self._next < self.n_issued_max:
            rid = self._next
            self._next += 1
            self.loop.schedule(t, PRIO_ARRIVAL, self._arrive, rid)

    def _arrive_chain(self, rid: int) -> None:
        nxt = rid + 1
        if nxt < self.n_issued_max:
            self.loop.schedule(float(self._times[nxt]), PRIO_ARRIVAL, self._arrive_chain, nxt)
        self._next = nxt
        self._arrive(rid)

    # ---- request path ----------------------------------------------------------------------
    def _count(self, delta: int) -> None:
        now = self.loop.now
        self.area += self.nsys * (now - self._last_t)  # Little's law: integral of N(t) dt
        self._last_t = now
        self.nsys += delta

    def _arrive(self, rid: int) -> None:
        r = self.req
        r.arrival[rid] = self.loop.now
        r.state[rid] = RUNNING
        self._count(1)
        i, o = r.inp[rid], r.out[rid]
        if i < 1 or o < 1:
            return self._drop(rid, "empty prompt or output")
        if i + o > self.cap_limit:
            return self._drop(rid, "prompt + output exceed the KV capacity of one instance")
        if not self.p_cands:
            self._unrouted.append(rid)
            return None
        self._route(rid)
        return None

    def _route(self, rid: int) -> None:
        r = self.req
        hashes = self.wl.hashes(rid).tolist() if self._hashes else ()
        inst = self.router.choose(self.p_cands, hashes)
        if r.inp[rid] > inst.cap:
            return self._drop(rid, "prompt exceeds the prefill instance's KV capacity")
        r.p_inst[rid] = inst.idx
        hit = 0
        if inst.cache is not None and hashes:
            blocks = inst.cache.lookup(hashes)
            hit = min(blocks * self.wl.block_tokens, r.inp[rid] - 1)
            inst.cache.insert(hashes)
        r.hit[rid] = hit
        r.pdone[rid] = hit
        r.todo[rid] = r.inp[rid] - hit
        inst.outstanding += r.inp[rid] + (r.out[rid] if inst.role == "agg" else 0)
        inst.submit_prefill(rid)
        return None

    def _drop(self, rid: int, why: str) -> None:
        self.req.state[rid] = DROPPED
        self.dropped += 1
        self.drop_reasons[why] = self.drop_reasons.get(why, 0) + 1
        self._count(-1)
        if self._times is None:
            self._issue(self.loop.now + self.arrivals.think_s)

    def on_prefill_start(self, rid: int, inst: Instance) -> None:
        r = self.req
        if r.pf_start[rid] != r.pf_start[rid]:  # NaN: first chunk
            r.pf_start[rid] = self.loop.now

    def on_prefill_batch(
        self, inst: Instance, batch: list[tuple[int, int, int]], start: float, end: float
    ) -> None:
        """Layer-wise transfer: pair prompts that finish in this step as the step starts."""
        if self.cfg.transfer_mode != "layerwise" or inst.role != "prefill":
            return
        r = self.req
        for rid, n, cached in batch:
            if n == r.todo[rid]:
                r.ctx0[rid] = n + cached
                r.not_before[rid] = end
                self._pair(rid, inst)

    def on_prefill_done(self, rid: int, inst: Instance, now: float) -> None:
        r = self.req
        r.pf_end[rid] = now
        inst.outstanding -= r.inp[rid]
        if r.d_inst[rid] < 0:
            self._pair(rid, inst)

    def _pair(self, rid: int, p: Instance) -> None:
        r = self.req
        if not self.d_cands:
            raise ConfigError("no decode instance is available (all draining or switching)")
        d = self.pairer.choose(self.d_cands, near=p)
        r.d_inst[rid] = d.idx
        d.outstanding += r.out[rid]
        d.offer(rid)

    def start_transfer(self, rid: int, d: Instance) -> None:
        r = self.req
        p = self.inst[r.p_inst[rid]]
        self.net.start(rid, p, d, r.ctx0[rid] * self.cfg.kv_bytes_per_token)

    def on_transfer_done(self, rid: int, p: Instance, d: Instance, start: float) -> None:
        r, now = self.req, self.loop.now
        p.release(r.ctx0[rid])
        end = nb = r.not_before[rid]  # layer-wise: prefill end; 0 otherwise
        if nb:  # the last layer's KV can only leave after the prefill ends
            last = r.ctx0[rid] * self.cfg.kv_bytes_per_token / self.cfg.kv_layers
            nb += last / (p.spec.gpus * p.spec.nic_bytes_per_s)  # one layer over the NIC
        else:
            end = r.pf_end[rid]
        t = max(now, nb) + self.cfg.link_latency_s
        r.xfer_s[rid] = t - end  # KV transfer time after prefill, as TTFT sees it
        self.loop.schedule(t, PRIO_NETWORK, d.deliver, rid)

    def on_first_token(self, rid: int, now: float) -> None:
        self.req.first[rid] = now

    def on_finish(self, rid: int, inst: Instance, now: float) -> None:
        r = self.req
        r.finish[rid] = now
        r.state[rid] = DONE
        self.finished += 1
        self._count(-1)
        inst.outstanding -= r.out[rid] + (r.inp[rid] if inst.role == "agg" else 0)
        if self._times is None:
            self._issue(now + self.arrivals.think_s)

    # ---- role switching --------------------------------------------------------------------
    def _begin_switch(self, sw: RoleSwitch) -> None:
        inst = self.inst[sw.instance]
        if inst.role == sw.role or inst.role == "agg":
            return
        inst.draining, inst.next_role = True, sw.role
        self._refresh_candidates()
        if not inst.busy:
            self.check_drained(inst)

    def check_drained(self, inst: Instance) -> None:
        """Called by an idle draining instance: go offline for switch_cost_s once empty."""
        if inst.pq or inst.jq or inst.ready or inst.inflight or inst.B or inst.kv_used:
            return
        inst.draining, inst.offline = False, True
        self.loop.schedule(
            self.loop.now + self.cfg.switch_cost_s, PRIO_CONTROL, self._end_switch, inst
        )

    def _end_switch(self, inst: Instance) -> None:
        inst.offline = False
        inst.role = inst.next_role or inst.role
        inst.next_role = None
        self.switch_log.append((self.loop.now, inst.idx, inst.role))
        self._refresh_candidates()
        while self._unrouted and self.p_cands:
            self._route(self._unrouted.popleft())

    def _policy_tick(self, _: object) -> None:
        pol = self.cfg.policy
        assert pol is not None
        view = [
            {
                "role": i.role,
                "queued_tokens": sum(self.req.todo[x] for x in i.pq),
                "waiting": len(i.pq) + len(i.jq),
                "running": i.B,
                "outstanding_tokens": i.outstanding,
                "draining": int(i.draining or i.offline),
            }
            for i in self.inst
        ]
        for sw in pol.decide(self.loop.now, view):
            self._begin_switch(sw)
        if self.finished + self.dropped < self.n_issued_max:
            self.loop.schedule(
                self.loop.now + pol.interval_s, PRIO_CONTROL, self._policy_tick, None
            )

    # ---- driving ---------------------------------------------------------------------------
    def run(
        self, until: float = math.inf, progress: Callable[[int, int], None] | None = None
    ) -> None:
        """Run to completion (or `until` seconds); progress(done, total) every ~50k events."""
        loop = self.loop
        while len(loop) and loop.peek_time() <= until:
            loop.run(until, max_events=50_000)
            if progress is not None:
                progress(self.finished + self.dropped, self.n_issued_max)
        if until != math.inf:
            loop.now = max(loop.now, until)
        self._count(0)
