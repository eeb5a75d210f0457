"""`pdplan simulate`'s report: the summary table, the per-instance (or per-pool) load table, the
overload warning and the output files (helpers of cli/simulate.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pdplan.errors import InputError
from pdplan.sim import Pool, SimResult
from pdplan.sim.state import DONE, DROPPED

from ._common import emit, kv_table, warn

__all__ = ["overload_warning", "secs", "show", "write"]

GROUP_ABOVE = 8  # more instances than this: one row per pool (identical instances grouped)
MIN_REQUESTS = 20  # fewer: too few arrivals to tell a rate from noise
OVERLOAD = 0.9  # served / offered below this: the cluster does not keep up
_ROLE_NAMES = {"prefill": "prefill", "decode": "decode", "agg": "aggregated"}


def secs(x: float) -> str:
    """A duration for people: '850 us', '21.8 ms', '2 s', '12.3 s', '1,234 s'; '-' if NaN."""
    if not math.isfinite(x):
        return "-"
    if x == 0:
        return "0 ms"
    if x < 1e-3:
        return f"{x * 1e6:.3g} us"
    if x < 1:
        return f"{x * 1e3:.3g} ms"
    return f"{x:.3g} s" if x < 100 else f"{x:,.0f} s"


def show(s: dict[str, Any], res: SimResult, deployment: str, as_json: bool) -> None:
    """The summary (JSON, or a table of latencies and SLOs and one of the instances' load)."""

    def render(c: Console) -> None:
        c.print(kv_table(f"simulate {deployment}", _summary_rows(s)))
        c.print(_load_table(s, res))

    emit(s, as_json, render)


def _summary_rows(s: dict[str, Any]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [
        (k, f"{s[k]:,}") for k in ("requests", "finished", "dropped", "preemptions")
    ]
    if s["unfinished"]:
        rows.insert(2, ("unfinished", f"{s['unfinished']:,} (still queued when the run ended)"))
    rows.append(("throughput_rps", f"{s['throughput_rps']:.3f} req/s"))
    rows.append(("goodput_rps", f"{s['goodput_rps']:.3f} req/s (finished within both SLOs)"))
    rows += [
        (
            f"{m[:-2].upper()} p50 / p90 / p99 / p99.9 (ms)",
            " / ".join(f"{s[m][q] * 1e3:.1f}" for q in ("p50", "p90", "p99", "p99.9")),
        )
        for m in ("ttft_s", "tpot_s", "itl_s", "e2e_s")
    ]
    if s["role_switches"]:
        done = ", ".join(
            f"#{w['instance']} -> {w['role']} at {w['t_s']:.1f} s" for w in s["role_switches"]
        )
        rows.append(("role switches", done))
    if s["prefix_hit_rate"] > 0:
        rows.append(("prefix-cache hit rate", f"{s['prefix_hit_rate']:.3f} of prompt tokens"))
    slo = s["slo"]
    within = f"TTFT <= {secs(slo['ttft_s'])} and TPOT <= {secs(slo['tpot_s'])}"
    rows.append(("SLO attainment", f"{slo['attainment']:.3f} ({within})"))
    return rows


def _load_table(s: dict[str, Any], res: SimResult) -> Table:
    """One row per instance, or per pool of identical instances when there are many: busy
    share, time-averaged queued / running requests, the prefill queue wait (arrival -> prefill
    start) of the prompts it prefilled and, disaggregated, the KV transfers it received."""
    insts = s["instances"]
    disagg = any(i["role"] != "agg" for i in insts)
    groups = _groups(insts)
    pooled = any(len(g) > 1 for g in groups)
    t = Table(
        title="pools (means per instance)" if pooled else "instances",
        caption="queued / running: time-averaged requests waiting / in the batch",
    )
    heads = ["pool" if pooled else "instance", "utilisation", "queued", "running"]
    heads.append("prefill queue p50 / p99" if disagg else "queue p50 / p99")
    if disagg:
        heads.append("KV transfer p50 / p99")
    for h in heads:
        t.add_column(h, justify="left" if h in ("pool", "instance") else "right")
    c = res.columns
    done = (c["state"] == DONE) & (np.arange(len(c["state"])) >= res.warmup)
    for g in groups:
        idx = [i["index"] for i in g]
        row = [_label(g), *(f"{np.mean([i[k] for i in g]):{f}}" for k, f in _MEANS)]
        on_p = done & np.isin(c["p_inst"], idx)
        row.append(_p50_p99(c["pf_start"][on_p] - c["arrival"][on_p]))
        if disagg:
            row.append(_p50_p99(c["xfer_s"][done & np.isin(c["d_inst"], idx)]))
        t.add_row(*row)
    return t


_MEANS = (("utilisation", ".3f"), ("mean_queue", ",.2f"), ("mean_running", ",.2f"))


def _groups(insts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Each instance alone, or (many instances) those of one role, layout and GPU together."""
    if len(insts) <= GROUP_ABOVE:
        return [[i] for i in insts]
    pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i in insts:
        pools.setdefault((i["role"], i["name"].partition(":")[2]), []).append(i)
    return list(pools.values())


def _label(group: list[dict[str, Any]]) -> str:
    """'prefill0:tp4' for one instance; '8 x prefill:tp4' for a pool of 8."""
    first = group[0]
    if len(group) == 1:
        return str(first["name"])
    return f"{len(group)} x {first['role']}:{first['name'].partition(':')[2]}"


def _p50_p99(x: np.ndarray) -> str:
    x = x[np.isfinite(x)]
    if not len(x):
        return "-"
    p50, p99 = np.quantile(x, [0.5, 0.99])
    return f"{secs(float(p50))} / {secs(float(p99))}"


def overload_warning(s: dict[str, Any], res: SimResult, pools: Sequence[Pool]) -> None:
    """Warn when open-loop arrivals outpace what the cluster serves, so that queues grow
    until arrivals stop: rates compare the middle 90 % of arrivals with the middle 90 % of
    first tokens (robust to a short run's latency and to long outputs)."""
    rates = _rates(res)
    if rates is None or rates[1] >= OVERLOAD * rates[0]:
        return
    offered, served = rates
    warn(
        f"overloaded: requests arrive at {offered:.3g} req/s but are served at only "
        f"{served:.3g} req/s ({100 * served / offered:.0f} %), so queues grow until arrivals stop "
        f"(TTFT p50 {secs(s['ttft_s']['p50'])}, p99 {secs(s['ttft_s']['p99'])}); "
        + _bottleneck(s["instances"], pools, offered / served)
    )


def _rates(res: SimResult) -> tuple[float, float] | None:
    """(arrivals, first tokens) per second over the middle 90 % of each, of the requests not
    dropped; None with too few requests or all arriving at once."""
    c = res.columns
    live = np.isfinite(c["arrival"]) & (c["state"] != DROPPED)
    arrived = np.sort(c["arrival"][live])
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


def _bottleneck(insts: list[dict[str, Any]], pools: Sequence[Pool], factor: float) -> str:
    """Which role's instances are saturated (busy near all the time, with the longest
    queues), and how many of them would serve the offered load."""
    by_role: dict[str, list[dict[str, Any]]] = {}
    for i in insts:
        by_role.setdefault(i["role"], []).append(i)
    stats = {
        r: (
            float(np.mean([i["utilisation"] for i in g])),
            float(np.mean([i["mean_queue"] for i in g])),
        )
        for r, g in by_role.items()
    }
    busy = [r for r, (u, _) in stats.items() if u >= OVERLOAD]
    role = max(busy, key=lambda r: stats[r][1]) if busy else max(stats, key=lambda r: stats[r][0])
    u, q = stats[role]
    what = _ROLE_NAMES.get(role, role)
    state = "saturated" if busy else "the busiest"
    return (
        f"the {what} instances are {state} (busy {100 * u:.0f} % of the time, "
        f"{q:,.1f} requests queued on each on average): {_more(role, pools, factor)}"
    )


def _more(role: str, pools: Sequence[Pool], factor: float) -> str:
    """'add prefill instances (about 4P:tp4 instead of 2P:tp4 for this load)'."""
    what = _ROLE_NAMES.get(role, role)
    mine = [p for p in pools if p.role == role]
    if len(mine) != 1:
        return f"add {what} instances"
    p = mine[0]
    at = f"@{p.gpu}" if p.gpu else ""

    def spelt(n: int) -> str:
        if role == "agg":
            return f"{p.layout}{f'x{n}' if n > 1 else ''}{at}"
        return f"{n}{role[0].upper()}:{p.layout}{at}"

    need = max(p.count + 1, math.ceil(p.count * factor))
    return f"add {what} instances (about {spelt(need)} instead of {spelt(p.count)} for this load)"


def write(res: SimResult, o: dict[str, Any]) -> None:
    """Per-request rows, the instances' timeline (CSV, or Parquet by extension) and the
    Chrome trace, where asked for."""
    if o["requests_out"]:
        _write_table(res.request_table(), o["requests_out"])
    if o["timeline_out"]:
        _write_table(res.timeline_table(), o["timeline_out"])
    if o["trace_out"]:
        try:
            Path(o["trace_out"]).write_text(json.dumps(res.chrome_trace()))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=o["trace_out"]) from exc


def _write_table(table: dict[str, Any], path: str) -> None:
    """Columns -> Parquet (a .parquet name) or CSV with a header row."""
    try:
        if path.endswith(".parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table(table), path)
        else:
            import numpy as np

            cols = list(table)
            data = np.column_stack([table[c] for c in cols]) if cols else np.zeros((0, 0))
            header = ",".join(cols)
            np.savetxt(path, data, delimiter=",", header=header, comments="", fmt="%.9g")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc
