"""Typing views of the classes the simulator's mixins are parts of (type checking only).

Instance (engine.py) and Simulator (cluster.py) are assembled from mixins whose methods use
attributes and methods of the whole class. For a type checker each mixin derives from the
view here, which declares them; at run time both names are plain `object`, so the classes'
MRO, slots and attribute access are exactly what they would be without it."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["InstanceHost", "SimulatorHost"]

if TYPE_CHECKING:
    import itertools
    from array import array
    from collections import deque
    from collections.abc import Callable

    import numpy as np

    from pdplan.perf.step import StepModel
    from pdplan.sim.arrivals import Arrivals
    from pdplan.sim.cache import PrefixCache
    from pdplan.sim.cluster import Simulator
    from pdplan.sim.config import InstanceSpec, SimConfig
    from pdplan.sim.engine import Instance
    from pdplan.sim.gate import ContextGate
    from pdplan.sim.kernel import EventLoop, _Heap
    from pdplan.sim.network import Network
    from pdplan.sim.routing import Router
    from pdplan.sim.runs import RunLog
    from pdplan.sim.state import Detours, Requests
    from pdplan.workload.core import Workload

    _Batch = list[tuple[int, int, int]]  # (rid, prompt tokens this step, cached tokens)

    class InstanceHost:
        """What engine.Instance has, as its mixins see it (engine.Instance.__init__ sets
        the attributes; the methods are defined by Instance or one of its mixins). No
        __slots__ here, or a checker would look for the attributes in the mixins' empty
        slots (Instance's hold them)."""

        idx: int
        spec: InstanceSpec
        sim: Simulator
        role: str
        model: StepModel
        cap: int
        st: int
        wins: tuple[tuple[int, float], ...]
        fit: int
        pq: deque[int]
        inbox: deque[int]
        recv: int
        gate: ContextGate | None
        holds: bool
        poll_K: int
        gate_K: int
        gate_tokens: int
        gate_ranks: set[int]
        jq: deque[int]
        ready: deque[int]
        swapped: set[int]
        fresh: list[int]
        fin: list[tuple[int, int, int, int]]
        running: dict[int, None]
        K: int
        tK: float
        B: int
        C: int
        kv_used: int
        kv_full: int
        inflight: int
        prefilling: int
        _started: set[int]
        busy: bool
        in_run: bool
        run_n: int
        run_a: float
        run_c: float
        ver: int
        first_w: int
        first_stall: float
        run_fresh: list[int]
        stall: float
        join_stall: dict[int, float]
        swap_s: float
        outstanding: int
        busy_s: float
        draining: bool
        next_role: str | None
        offline: bool
        cache: PrefixCache | None
        ckpt: bool
        _affine: dict[int, tuple[float, float]]
        _kink: int
        samples: array[float]
        _plain: bool
        poll_due: bool
        _lazy: bool
        _special: bool
        exact: bool
        layerwise: bool
        _pf_cache: dict[tuple[float, float, int], float]
        loop: EventLoop
        heap: _Heap
        seq: itertools.count[int]
        _wake_cb: Callable[[int], None]
        _end_pf_cb: Callable[[_Batch], None]
        tracer: list[tuple] | None
        itl_put: Callable[[bytes], None]
        burst: float
        burst_carry: float
        burst_debt: dict[int, float]
        _net_start: Callable[[int, Instance, Instance, float], None]
        _kvb: Callable[[int], float]

        def _decide(self) -> None: ...
        def seq_fixed(self, rid: int) -> int: ...
        def next_poll(self, k: int) -> int: ...
        def _join_ready(self) -> None: ...
        def _start_run(self) -> None: ...
        def _schedule_run(self, n: int) -> None: ...
        def _close_run(self, n: int, t_end: float) -> None: ...
        def _advance(self, n: int) -> None: ...
        def _close_burst(self, n: int, lo: float, slope: float, st: float) -> None: ...
        def _burst_tokens(self) -> int: ...
        def _emit_fresh(self, t1: float, per_token: float = 0.0) -> int: ...
        def _joiner_gaps(self, gap: float) -> int: ...
        def _record_first_step(self, now: float, dur: float) -> None: ...
        def _swap_in(self, rid: int, need: int) -> None: ...
        def _swap_step(self) -> None: ...
        def _make_room(self) -> None: ...
        def _recomputed(self, rid: int, now: float) -> None: ...
        def _take_prompts(self, budget: int, chunk: bool, max_seqs: int) -> _Batch: ...
        def _finish_chunks(self, batch: _Batch, now: float) -> None: ...

    class SimulatorHost:
        """What cluster.Simulator has, as its mixins see it (Simulator.__init__ sets the
        attributes; the methods are defined by Simulator or one of its mixins)."""

        cfg: SimConfig
        wl: Workload
        arrivals: Arrivals
        loop: EventLoop
        _heap: _Heap
        _seq: itertools.count[int]
        req: Requests
        _need_max: int
        itl: RunLog
        tracer: list[tuple] | None
        pf_caches: dict[int, dict]
        net: Network
        inst: list[Instance]
        p_cands: list[Instance]
        d_cands: list[Instance]
        d_cap_min: int
        _d_fit_all: bool
        cap_limit: int
        router: Router
        pairer: Router
        _least_pair: bool
        _least_route: bool
        preemptions: int
        finished: int
        dropped: int
        drop_reasons: dict[str, int]
        switch_log: list[tuple[float, int, str]]
        nsys: int
        area: float
        _last_t: float
        _fe: tuple[float, float] | None
        _fe_free: float
        _unrouted: deque[int]
        _parked: dict[int, float]
        _detours: Detours
        _sent: dict[int, tuple[Instance, Instance, float]]
        _tail: dict[int, int]
        _pending_roles: dict[int, str]
        _prealloc_on: bool
        _pre_wait: set[int]
        _pre_ok: set[int]
        _evicted: dict[int, float]
        _out_of_batch: dict[int, float]
        _frozen_ticks: int
        _hashes: bool
        _times: np.ndarray | None
        _times_l: memoryview
        n_issued_max: int
        _next: int
        _until: float
        t_left: float

        def _refresh_candidates(self) -> None: ...
        def _sample_tick(self, _: object) -> None: ...
        def _drop(self, rid: int, why: str) -> None: ...
        def _route(self, rid: int) -> None: ...
        def _pair_parked(self) -> None: ...
        def _unpark_from(self, p: Instance) -> int: ...
        def pre_pair(self, rid: int, p: Instance) -> None: ...
        def send_prealloc(self, rid: int, p: InstanceHost) -> None: ...

else:
    InstanceHost = SimulatorHost = object
