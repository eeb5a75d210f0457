"""`pdplan simulate`'s overload warning: open-loop arrivals that outpace the cluster."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pdplan.sim import Pool, SimResult
from pdplan.sim.state import DROPPED

from ._common import warn
from ._simulate_report import secs

__all__ = ["overload_warning"]

MIN_REQUESTS = 20  # fewer: too few arrivals to tell a rate from noise
OVERLOAD = 0.9  # served / offered below this: the cluster does not keep up
COMPLETIONS_BEHIND = 0.8  # completions / arrivals below this over the later half of the
# arrivals: the backlog grows (looser than OVERLOAD: the count in the system fluctuates more
# than queues in front of first tokens, most near saturation; a healthy run stays >= ~0.9)
NOISE_SIGMAS = 3.0  # growth of the number in the system that is not noise, in its sd
SETTLED = 2.0  # x the unloaded E2E: a healthy system's backlog has settled by then
MIN_BACKLOG = 1.0  # requests queued (time average, over a role's instances) that make it the
# bottleneck of a run whose first tokens fall behind: fewer is no queue in front of them
LINK_FULL = 0.85  # a KV link's bytes / (bw x run time) at or above this: it is the bottleneck
_ROLE_NAMES = {"prefill": "prefill", "decode": "decode", "agg": "aggregated"}


def overload_warning(
    s: dict[str, Any], res: SimResult, pools: Sequence[Pool], default_gpu: str | None = None
) -> None:
    """Warn when open-loop arrivals outpace what the cluster serves, so that the backlog grows
    until arrivals stop. Two signs: first tokens fall behind arrivals (queues grow: rates of
    the middle 90 % of arrivals and of first tokens, robust to a short run's latency and to
    long outputs), or completions do (a decode-bound batch absorbs the backlog, so queues stay
    short while every request slows down: see _completion_rates)."""
    rates = _rates(res)
    backlog = rates is not None and rates[1] < OVERLOAD * rates[0]
    if rates is not None and backlog:
        offered, served = rates
        served_as = "first tokens come at only"  # not completions: a decode-bound run's are fewer
        how = (
            ", so queues grow until arrivals stop "
            f"(TTFT p50 {secs(s['ttft_s']['p50'])}, p99 {secs(s['ttft_s']['p99'])})"
        )
    else:
        late = _completion_rates(res)
        if late is None or late[1] >= COMPLETIONS_BEHIND * late[0]:
            return
        offered, served = _mid_rate(_live_arrivals(res)[1]), s["throughput_rps"]
        served_as = "are served at only"
        how = (
            f" over the run (and {late[1]:.3g} req/s over the later half of the arrivals), so "
            "the backlog grows in the batch and the queues until arrivals stop "
            f"(TPOT p50 {secs(s['tpot_s']['p50'])}, E2E p99 {secs(s['e2e_s']['p99'])})"
        )
    factor = offered / served if served > 0 else math.inf
    pools = _on_their_gpus(pools, default_gpu)
    warn(
        f"overloaded: {_who(res)} arrive at {offered:.3g} req/s but {served_as} "
        f"{served:.3g} req/s ({100 * served / offered:.0f} %){how}; "
        + (_link_bound(res, s) or _bottleneck(s["instances"], pools, factor, backlog))
    )


def _who(res: SimResult) -> str:
    """Whose arrivals the rates count: the dropped requests never load the cluster, so where
    some were dropped the rates are of the others, and the warning says so."""
    dropped = int(np.sum(res.columns["state"] == DROPPED))
    return f"the requests not dropped ({dropped:,} were)" if dropped else "requests"


def _live_arrivals(res: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the requests that arrived and were not dropped, their sorted arrivals)."""
    c = res.columns
    live = np.isfinite(c["arrival"]) & (c["state"] != DROPPED)
    return live, np.sort(c["arrival"][live])


def _rates(res: SimResult) -> tuple[float, float] | None:
    """(arrivals, first tokens) per second over the middle 90 % of each, of the requests not
    dropped; None with too few requests or all arriving at once."""
    live, arrived = _live_arrivals(res)
    c = res.columns
    served = np.sort(c["first"][live & np.isfinite(c["first"])])
    if min(len(arrived), len(served)) < MIN_REQUESTS:
        return None
    offered = _mid_rate(arrived)
    return None if math.isinf(offered) else (offered, _mid_rate(served))


def _mid_rate(t: np.ndarray) -> float:
    """Events per second between the 5th and the 95th percentile of the sorted times t."""
    i, j = int(0.05 * len(t)), int(0.95 * len(t)) - 1
    span = float(t[j] - t[i])
    return (j - i) / span if span > 0 else math.inf


def _completion_rates(res: SimResult) -> tuple[float, float] | None:
    """(arrivals, completions) per second between the median and the 95th-percentile arrival,
    of the requests not dropped. Completions = arrivals - growth of the number in the system,
    so a healthy run's ratio stays near 1 up to that number's fluctuation. None with too few
    requests, when the growth is within NOISE_SIGMAS of that fluctuation (the number in a
    steady system varies about as a Poisson count of mean L, Little's L, so the difference of
    two samples by sd ~ sqrt(2 L)), or when the unloaded E2E is over 1 / SETTLED of the time
    from the first arrival to the median (a short burst: its requests are still in flight,
    which is latency, not a growing backlog)."""
    live, a = _live_arrivals(res)
    n = len(a)
    if n < MIN_REQUESTS:
        return None
    lo, hi = float(a[n // 2]), float(a[int(0.95 * n) - 1])
    c = res.columns
    if hi <= lo or SETTLED * _unloaded_e2e(res, live) > lo - float(a[0]):
        return None
    arrived = int(np.sum((a > lo) & (a <= hi)))
    fin = c["finish"][live]
    done = int(np.sum((fin > lo) & (fin <= hi)))
    if arrived - done < NOISE_SIGMAS * math.sqrt(2.0 * res.little_l + 1.0):
        return None  # within the fluctuation of a steady number in the system
    return arrived / (hi - lo), done / (hi - lo)


def _unloaded_e2e(res: SimResult, live: np.ndarray) -> float:
    """s, the median request's E2E on a lightly loaded cluster: the 5th percentiles of TTFT
    and of TPOT (the requests least slowed by others) with the median output length."""
    c = res.columns
    done = live & np.isfinite(c["finish"])
    out = c["out"][done].astype(np.float64)
    first, fin = c["first"][done], c["finish"][done]
    if not len(out):
        return math.inf
    ttft = np.percentile(first - c["arrival"][done], 5)
    multi = out > 1
    tpot = np.percentile((fin - first)[multi] / (out[multi] - 1), 5) if multi.any() else 0.0
    return float(ttft + (np.median(out) - 1) * tpot)


def _link_bound(res: SimResult, s: dict[str, Any]) -> str | None:
    """When an instance's KV link carries near its capacity over the run (bytes moved /
    (bw x run time) >= LINK_FULL): the transfers queue on it, whatever the pools' busy time
    says (a decode batch that always holds a request reads 100 % busy). None otherwise."""
    insts = [i for i in s["instances"] if i.get("kv_link_utilisation", 0.0) >= LINK_FULL]
    if not insts:
        return None
    top = max(insts, key=lambda i: i["kv_link_utilisation"])
    c = res.columns
    x = c["xfer_s"][np.isfinite(c["xfer_s"])]
    wire = f", median {secs(float(np.median(x)))} on the wire" if len(x) else ""
    more = "decode" if top["role"] == "decode" else "prefill"
    return (
        f"the KV links are full ({top['name']}'s carries {100 * top['kv_link_utilisation']:.0f} "
        f"% of its capacity{wire}): add {more} instances (more NICs for the KV), place P and "
        "D in one node (NVLink), or ship FP8 KV (--kv-dtype fp8)"
    )


def _bottleneck(
    insts: list[dict[str, Any]], pools: Sequence[Pool], factor: float, backlog: bool = False
) -> str:
    """Which role's instances are saturated, and how many of them would serve the offered
    load; of a role in several pools (tp4@h100+tp4@a10), the busiest pool. With `backlog`
    (first tokens fall behind arrivals) the role that holds the queue in front of them
    (_backlogged): busy time alone misleads there, as a decode batch that always holds a
    request reads 100 % busy, and a saturated prefill pool's share of the run is diluted by
    the decode tail after its queue drains (1P:tp4+4D:tp4 read 84 % busy with 168 prompts
    queued, against 95 % for decodes with none queued, and was sent more decode instances)."""
    by_role: dict[str, list[dict[str, Any]]] = {}
    for i in insts:
        by_role.setdefault(i["role"], []).append(i)
    stats = {r: _stats(g) for r, g in by_role.items()}
    queued = {r: sum(i["mean_queue"] for i in g) for r, g in by_role.items()}
    role = _backlogged(queued, stats) if backlog else None
    role = _busiest(stats) if role is None else role
    mine = [p for p in pools if p.role == role]
    what = _ROLE_NAMES.get(role, role)
    if len(mine) > 1 and len(by_role[role]) == sum(p.count for p in mine):
        return _busiest_pool(by_role[role], mine, what, backlog)
    u, q, run = stats[role]
    state = _state(u, backlog and queued[role] >= MIN_BACKLOG)
    return (
        f"the {what} instances are {state} (busy {100 * u:.0f} % of the time, "
        f"{q:,.1f} requests queued and {run:,.1f} in the batch on each on average): "
        + _more(role, pools, factor)
    )


def _stats(group: list[dict[str, Any]]) -> tuple[float, float, float]:
    """(utilisation, mean queue, mean running) averaged over instances."""
    cols = ("utilisation", "mean_queue", "mean_running")
    u, q, run = (float(np.mean([i[c] for i in group])) for c in cols)
    return u, q, run


def _backlogged(queued: dict[Any, float], stats: dict[Any, tuple[float, float, float]]) -> Any:
    """Of the roles (or pools) holding MIN_BACKLOG requests queued in all, the busiest; None
    where none does. A long queue alone does not make a role the bottleneck: a decode pool
    that keeps requests waiting for a slot also stalls the prefill instances (their KV holds
    the prompts it has not taken), whose queues then grow while they idle."""
    held = [r for r in queued if queued[r] >= MIN_BACKLOG]
    return max(held, key=lambda r: stats[r][0]) if held else None


def _state(u: float, backlogged: bool) -> str:
    """How the warning calls the instances it names: saturated when busy near all the run,
    the bottleneck when the backlog queues in front of them, else the busiest."""
    if u >= OVERLOAD:
        return "saturated"
    return "the bottleneck" if backlogged else "the busiest"


def _busiest(stats: dict[Any, tuple[float, float, float]]) -> Any:
    """Of the saturated (busy >= OVERLOAD) the one with the longest queues, else the busiest."""
    busy = [k for k, st in stats.items() if st[0] >= OVERLOAD]
    return max(busy, key=lambda k: stats[k][1]) if busy else max(stats, key=lambda k: stats[k][0])


def _busiest_pool(
    insts: list[dict[str, Any]], mine: list[Pool], what: str, backlog: bool = False
) -> str:
    """The busiest of one role's pools (its instances come in pool order; with `backlog`,
    of those holding a queue, as in _bottleneck) and more of it."""
    groups: dict[int, list[dict[str, Any]]] = {}
    start = 0
    for k, p in enumerate(mine):
        groups[k] = insts[start : start + p.count]
        start += p.count
    stats = {k: _stats(g) for k, g in groups.items()}
    queued = {k: sum(i["mean_queue"] for i in g) for k, g in groups.items()}
    top = _backlogged(queued, stats) if backlog else None
    k = _busiest(stats) if top is None else top
    u, q, run = stats[k]
    state = _state(u, top is not None)
    others = ", ".join(
        f"{_spelt(p, p.count)} busy {100 * stats[j][0]:.0f} %" for j, p in enumerate(mine) if j != k
    )
    p = mine[k]
    return (
        f"the {what} pool {_spelt(p, p.count)} is {state} (busy {100 * u:.0f} % of the time, "
        f"{q:,.1f} requests queued and {run:,.1f} in the batch on each on average; the other "
        f"{what} pools: {others}): add {what} instances to that pool (e.g. "
        f"{_spelt(p, p.count + 1)} instead of {_spelt(p, p.count)})"
    )


def _on_their_gpus(pools: Sequence[Pool], default_gpu: str | None) -> list[Pool]:
    """Where some pools name their GPU ('2P:tp4+2P:tp4@a100'), the others spelt on the
    default one too (2P:tp4@h200), so the hint tells the pools apart; else as given."""
    if default_gpu is None or all(p.gpu is None for p in pools):
        return list(pools)
    gpu = default_gpu.strip().lower()
    return [p if p.gpu else replace(p, gpu=gpu) for p in pools]


def _spelt(p: Pool, n: int) -> str:
    """Pool `p` with `n` instances, as --deployment spells it: 'tp4x2@h100', '3P:tp4'."""
    at = f"@{p.gpu}" if p.gpu else ""
    if p.role == "agg":
        return f"{p.layout}{f'x{n}' if n > 1 else ''}{at}"
    return f"{n}{p.role[0].upper()}:{p.layout}{at}"


def _more(role: str, pools: Sequence[Pool], factor: float) -> str:
    """'add prefill instances (about 4P:tp4 instead of 2P:tp4 for this load)'."""
    what = _ROLE_NAMES.get(role, role)
    mine = [p for p in pools if p.role == role]
    if len(mine) != 1 or not math.isfinite(factor):
        return f"add {what} instances"
    p = mine[0]
    need = max(p.count + 1, math.ceil(p.count * factor))
    return (
        f"add {what} instances (about {_spelt(p, need)} instead of {_spelt(p, p.count)} for "
        "this load)"
    )
