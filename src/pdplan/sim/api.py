"""Entry points: simulate a config on a workload; the closed-loop helper `accuracy` calls."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from numbers import Integral
from typing import Any, TypeGuard

import numpy as np

from pdplan.errors import ConfigError
from pdplan.sim.checks import _is_real, check_run
from pdplan.sim.cluster import Arrivals, Simulator
from pdplan.sim.config import InstanceSpec, SimConfig
from pdplan.sim.metrics import SimResult
from pdplan.sim.state import DROPPED, Detours
from pdplan.workload.core import Workload
from pdplan.workload.values import INT32_MAX

__all__ = ["collect", "simulate", "simulate_closed_loop"]


# per-request fields a SimResult keeps (numpy views of Requests' columns)
_COLUMNS = tuple("arrival pf_start pf_end xfer_s first finish inp out hit preempt p_inst".split())
_COLUMNS += ("d_inst", "state", "xfer_start")


def collect(sim: Simulator, warmup: int = 0) -> SimResult:
    """Freeze a finished Simulator into a SimResult."""
    r = sim.req
    n = sim.n_issued_max  # later workload rows (a trace cut by --duration) never arrive
    cols = {k: r.column(k)[:n] for k in _COLUMNS}
    arr = cols["arrival"]
    start = float(np.nanmin(arr[warmup:])) if np.isfinite(arr[warmup:]).any() else 0.0
    end = float(np.nanmax(cols["finish"])) if np.isfinite(cols["finish"]).any() else sim.loop.now
    dur = max(end - start, 1e-12)
    total = sim.loop.now
    if sim.finished + sim.dropped >= sim.n_issued_max:
        total = sim.t_left  # the last request left then: later events (a switch scheduled past
        # the end) or a generous `until` add no work and must not dilute utilisation and L
    total = max(total, 1e-12)
    return SimResult(
        columns=cols,
        itl=sim.itl,
        duration_s=dur,
        n_requests=int(np.isfinite(arr).sum()),  # arrived (a run cut by `until` sent fewer)
        dropped=sim.dropped,
        drop_reasons=dict(sim.drop_reasons),
        preemptions=sim.preemptions,
        little_l=sim.area / total,
        instances=[
            _inst_stats(i, label, total, w, d, sim.net.utilisation(i.idx, total))
            for i, label, w, d in zip(
                sim.inst,
                instance_labels([i.spec.name for i in sim.inst]),
                *_time_averages(
                    cols, len(sim.inst), total, sim.cfg, sim._out_of_batch, sim._detours
                ),
                strict=True,
            )
        ],
        events=sim.loop.events_run,
        slo=(sim.cfg.ttft_slo_s, sim.cfg.tpot_slo_s),
        warmup=warmup,
        trace_events=sim.tracer,
        switches=sim.switch_log,
        first_token_delay_s=sim.cfg.ttft_overhead_s,
        first_token_steps=sim.cfg.ttft_decode_steps,
        step_tokens=max(i.burst for i in sim.inst),  # speculative decode steps' tokens
        prealloc=sim.cfg.decode_prealloc,
    )


def instance_labels(names: list[str]) -> list[str]:
    """Instance names for the results, told apart: a name several specs share (one spec
    repeated: `(spec,) * 4`) gets '#1', '#2', ... in instance order; '' stays ''."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name and names.count(name) > 1:
            seen[name] = seen.get(name, 0) + 1
            name = f"{name}#{seen[name]}"
        out.append(name)
    return out


def _inst_stats(
    inst: Any, label: str, total: float, waiting: float, decoding: float, link: float
) -> dict[str, Any]:
    s = np.array(inst.samples, dtype=np.float64).reshape(-1, 5)  # (t, queued, run, kv, state)
    kv_mean, kv_peak = _kv_use(s, total, inst.cap)
    return {
        "index": inst.idx,
        "name": label,
        "role": inst.role,
        "utilisation": inst.busy_s / total,
        "mean_queue": waiting,
        "max_queue_sampled": int(s[:, 1].max()) if len(s) else 0,  # at the timeline samples
        "mean_running": decoding,
        "prefix_hit_blocks": inst.cache.hits if inst.cache is not None else 0,
        "kv_link_utilisation": link,  # busiest of its KV links: bytes / (bw x run time)
        "kv_capacity_tokens": inst.cap,
        "kv_state_tokens": inst.st,  # KV-pool tokens each sequence's recurrent state takes
        # [W, c] per window-layer group: a sequence of L tokens takes c * min(L, W) more
        "kv_window_tokens": [list(p) for p in inst.wins],
        "mean_kv_used": kv_mean,  # fraction of kv_capacity_tokens, time-averaged (samples)
        "peak_kv_used_sampled": kv_peak,  # the most of it in use at a timeline sample
        "timeline": s,
    }


def _kv_use(s: np.ndarray, total: float, cap: int) -> tuple[float, float]:
    """Time-averaged and peak KV in use, fractions of `cap` tokens, from the timeline samples
    (t, queued, run, kv, state): each sample's value holds until the next one (the sampler
    skips only stretches where nothing changes) and the last one until `total`."""
    if not len(s) or cap <= 0:
        return 0.0, 0.0
    t, kv = s[:, 0], s[:, 3]
    hold = np.diff(np.append(t, max(total, float(t[-1]))))  # s each sample's value holds
    span = float(hold.sum())
    mean = float(kv @ hold) / span if span > 0 else float(kv[-1])
    return mean / cap, float(kv.max()) / cap


def _time_averages(
    cols: dict[str, np.ndarray],
    n_inst: int,
    total: float,
    cfg: SimConfig,
    out_of_batch: dict[int, float] | None = None,
    detours: Detours | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per instance, time-averaged (waiting, running) request counts over [0, total], by
    Little's law: L = (sum of the times requests spent in the state there) / total.
    Waiting: arrival -> prefill start on a prefill / aggregated instance; prefill end ->
    transfer start on a decode instance (its admission queue, which the timeline's `queued`
    counts; not the time parked with no decode instance to go to, which no queue holds:
    `detours`). A request whose prefilled KV was given up at a role switch waits anew from
    then; its lost prefill counts where it ran. Running: prefill
    start -> end on a prefill instance; KV delivered (+ PD hand-off) -> finish on a decode
    instance (it joins the batch at the next step boundary; that step emits its first token);
    first token -> finish on an aggregated one, less the time a preempted request spent out
    of the batch (`out_of_batch`), which is waiting there. A state still open at the end
    counts up to `total`; requests never issued (NaN arrival), not placed or dropped count
    nothing.
    Summed in slices of requests, so the temporaries stay small for million-request runs."""

    def per_inst(where: np.ndarray, a: np.ndarray, b: np.ndarray, live: np.ndarray) -> np.ndarray:
        ok = np.isfinite(a) & (where >= 0) & live
        dt = np.clip(np.where(np.isfinite(b), b, total)[ok] - a[ok], 0.0, None)
        return np.bincount(where[ok], weights=dt, minlength=n_inst)[:n_inst]

    wait, dec = np.zeros(n_inst), np.zeros(n_inst)
    det = detours or Detours()
    cols = _restarted(cols, det.restart)
    step = 1 << 16
    for lo in range(0, len(cols["arrival"]), step):
        c = {k: cols[k][lo : lo + step] for k in _TIME_COLUMNS}
        p, d, live = c["p_inst"], c["d_inst"], c["state"] != DROPPED
        if cfg.decode_prealloc:  # queued on d for its KV room (NaN: still), then on p
            wait += per_inst(d, c["arrival"], c["xfer_start"], live)
            wait += per_inst(p, c["xfer_start"], c["pf_start"], live)
        else:
            wait += per_inst(p, c["arrival"], c["pf_start"], live)
        if cfg.disaggregated:
            wait += per_inst(d, c["pf_end"], c["xfer_start"], live)  # for a decode slot
            dec += per_inst(p, c["pf_start"], c["pf_end"], live)  # being prefilled
            kv_in = np.fmax(c["pf_end"], c["xfer_start"]) + c["xfer_s"] + cfg.handoff_s  # s
            dec += per_inst(d, kv_in, c["finish"], live)
        else:
            dec += per_inst(p, c["first"], c["finish"], live)
    where = cols["d_inst"] if cfg.disaggregated else cols["p_inst"]
    for rid, s in (out_of_batch or {}).items():
        if rid < len(where) and where[rid] >= 0 and cols["state"][rid] != DROPPED:
            dec[where[rid]] -= s
            wait[where[rid]] += s
    for rid, s in det.parked_s.items():  # parked: in no queue (the timeline agrees)
        if cols["d_inst"][rid] >= 0 and cols["state"][rid] != DROPPED:
            wait[cols["d_inst"][rid]] -= s
    for i, waited, ran in det.elsewhere:
        wait[i] += waited
        dec[i] += ran
    return wait / total, dec / total


def _restarted(cols: dict[str, np.ndarray], restart: dict[int, float]) -> dict[str, np.ndarray]:
    """cols with a restarted request's arrival moved to its restart (a copy; rare)."""
    if not restart:
        return cols
    arrival = cols["arrival"].copy()
    rids = np.fromiter(restart, dtype=np.int64, count=len(restart))
    arrival[rids] = np.fromiter(restart.values(), dtype=np.float64, count=len(restart))
    return {**cols, "arrival": arrival}


_TIME_COLUMNS: tuple[str, ...]
_TIME_COLUMNS = ("p_inst", "d_inst", "state", "arrival", "pf_start", "pf_end", "xfer_s")
_TIME_COLUMNS += ("xfer_start", "first", "finish")


def simulate(
    cfg: SimConfig,
    wl: Workload,
    arrivals: Arrivals | None = None,
    *,
    warmup: int = 0,
    until: float = math.inf,
    progress: Callable[[int, int], None] | None = None,
) -> SimResult:
    """Simulate `wl` on the cluster `cfg`; requests before index `warmup` are not measured."""
    check_run(cfg, wl, arrivals, warmup, until)
    sim = Simulator(cfg, wl, arrivals)
    sim.run(until, progress)
    res = collect(sim, warmup)
    sim.release()  # drop per-request state the result does not view (Simulator has cycles)
    return res


def simulate_closed_loop(
    instances: Sequence[InstanceSpec],
    isl: int,
    osl: int,
    concurrency: int,
    n_requests: int | None = None,
    warmup: int | None = None,
    range_ratio: float = 1.0,
    **cfg_kw: Any,
) -> dict[str, Any]:
    """Predict a fixed-concurrency benchmark row: C clients, ISL/OSL, closed loop.

    Default n_requests = max(10*C, 200) and warmup = C (the first wave, which all starts at
    t=0, is not measured). range_ratio < 1 draws each request's input and output length
    uniformly from [floor(range_ratio * L), L] (vLLM benchmark_serving.py's random dataset,
    `--random-range-ratio`), seeded by cfg_kw["seed"]. cfg_kw go to SimConfig
    (kv_bytes_per_token, routing, ...). Returns SimResult.summary() (seconds).
    """
    _check_closed_loop(isl, osl, concurrency, n_requests, warmup, range_ratio, cfg_kw)
    n = n_requests if n_requests is not None else max(10 * concurrency, 200)
    w = concurrency if warmup is None else warmup
    if w >= n:
        raise ConfigError(f"warmup={w} must be below n_requests={n}")
    rng = np.random.default_rng(cfg_kw.get("seed", 0))
    wl = Workload(_lengths(rng, isl, range_ratio, n, 1), _lengths(rng, osl, range_ratio, n, 2))
    cfg = SimConfig(instances=tuple(instances), **cfg_kw)
    res = simulate(cfg, wl, Arrivals("closed", concurrency=concurrency), warmup=w)
    return res.summary()


def _check_closed_loop(
    isl: Any, osl: Any, conc: Any, n: Any, warmup: Any, ratio: Any, cfg_kw: dict[str, Any]
) -> None:
    """simulate_closed_loop's arguments, each refused by name before any work."""
    for name, v in (("isl", isl), ("osl", osl), ("concurrency", conc)):
        if not (_whole(v) and 1 <= v <= INT32_MAX):
            raise ConfigError(f"{name}={v!r} must be a whole number in 1..{INT32_MAX:,}")
    if n is not None and not (_whole(n) and n >= 1):
        raise ConfigError(f"n_requests={n!r} must be a whole number >= 1 (or None)")
    if warmup is not None and not (_whole(warmup) and warmup >= 0):
        raise ConfigError(f"warmup={warmup!r} must be a whole number >= 0 (or None)")
    if not (_is_real(ratio) and 0.0 < ratio <= 1.0):
        raise ConfigError(f"range_ratio={ratio!r} must be in (0, 1]")
    unknown = sorted(set(cfg_kw) - {f.name for f in fields(SimConfig)} - {"instances"})
    if unknown or "instances" in cfg_kw:
        raise ConfigError(f"unknown SimConfig field(s) {unknown or ['instances']} in cfg_kw")
    seed = cfg_kw.get("seed", 0)
    if not (_whole(seed) and seed >= 0):
        raise ConfigError(f"seed={seed!r} must be a whole number >= 0")


def _whole(v: Any) -> TypeGuard[int]:
    return isinstance(v, Integral) and not isinstance(v, bool)


def _lengths(rng: np.random.Generator, length: int, ratio: float, n: int, low: int) -> np.ndarray:
    """n lengths uniform in [max(low, floor(ratio * length)), length] (all = length at 1)."""
    lo = max(low, min(length, int(length * ratio)))
    if lo >= length:
        return np.full(n, length, np.int32)
    return rng.integers(lo, length + 1, n).astype(np.int32)


def with_exact(cfg: SimConfig, exact: bool = True) -> SimConfig:
    """The same config in exact (step-every-iteration) or event-skipping mode."""
    return replace(cfg, exact=exact)
