"""`pdplan simulate`'s report: the summary table, the per-instance (or per-pool) load table, the
overload warning and the output files (helpers of cli/simulate.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from pdplan.errors import InputError
from pdplan.sim import Pool, SimResult
from pdplan.sim.state import DONE, STATE_NAMES

from ._common import emit, kv_table
from ._paths import replaced_on_success

__all__ = ["overload_warning", "secs", "show", "write"]

GROUP_ABOVE = 8  # more instances than this: one row per pool (identical instances grouped)
ROW_GROUP_ROWS = 1 << 16  # Parquet rows per row group of --requests-out / --timeline-out
_QS = ("p50", "p90", "p99", "p99.9")


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
    """The summary (JSON, or a table of latencies and SLOs and one of the instances' load).
    A run whose every request was dropped has nothing to show: one error line says why."""
    if s["requests"] and s["dropped"] == s["requests"]:
        raise InputError(
            f"all {s['requests']:,} requests were dropped ({_reasons(s['drop_reasons'])}), "
            "so there are no latencies to report"
        )

    def render(c: Console) -> None:
        c.print(kv_table(f"simulate {deployment}", _summary_rows(s)))
        c.print(_load_table(s, res))

    emit(s, as_json, render)


def overload_warning(
    s: dict[str, Any], res: SimResult, pools: Sequence[Pool], default_gpu: str | None = None
) -> None:
    """Warn when open-loop arrivals outpace the cluster (see cli/_simulate_overload.py)."""
    from ._simulate_overload import overload_warning as check

    check(s, res, pools, default_gpu)


def _reasons(reasons: dict[str, int]) -> str:
    """'empty prompt or output: 2; prompt exceeds ...: 1', most frequent first."""
    return "; ".join(f"{why}: {n:,}" for why, n in sorted(reasons.items(), key=lambda x: -x[1]))


def _summary_rows(s: dict[str, Any]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [
        (k, f"{s[k]:,}") for k in ("requests", "finished", "dropped", "preemptions")
    ]
    if s["dropped"]:
        rows[2] = ("dropped", f"{s['dropped']:,} ({_reasons(s['drop_reasons'])})")
    if s["unfinished"]:
        rows.insert(2, ("unfinished", f"{s['unfinished']:,} (still queued when the run ended)"))
    rows.append(("throughput_rps", f"{s['throughput_rps']:.3f} req/s"))
    rows.append(("goodput_rps", f"{s['goodput_rps']:.3f} req/s (finished within both SLOs)"))
    metrics = [("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("ITL", "itl_s"), ("E2E", "e2e_s")]
    if any(i["role"] != "agg" for i in s["instances"]):  # disaggregated: TTFT's P -> D part
        metrics += [("wait for decode slot", "decode_slot_wait_s")]
        metrics += [("KV transfer", "kv_transfer_s")]
    rows += [(f"{name} p50 / p90 / p99 / p99.9 (ms)", _ms(s[key])) for name, key in metrics]
    if s["role_switches"]:
        done = ", ".join(
            f"#{w['instance']} -> {w['role']} at {w['t_s']:.1f} s" for w in s["role_switches"]
        )
        rows.append(("role switches", done))
    if s["prefix_hit_rate"] > 0:
        rows.append(("prefix-cache hit rate", f"{s['prefix_hit_rate']:.3f} of prompt tokens"))
    if s.get("spec_decode"):
        sd = s["spec_decode"]
        rows.append(("speculative decoding", f"{sd['method']}, {sd['draft_tokens']} drafts at "
                     f"acceptance {sd['acceptance']:g}: {sd['tokens_per_step']:.2f} tokens a "
                     "step (ITL: one gap a step)"))  # fmt: skip
    slo = s["slo"]
    within = f"TTFT <= {secs(slo['ttft_s'])} and TPOT <= {secs(slo['tpot_s'])}"
    rows.append(("SLO attainment", f"{slo['attainment']:.3f} ({within})"))
    return rows


def _ms(p: dict[str, float]) -> str:
    """'12.4 / 13.3 / 14.2 / 14.6' (ms); '-' for a percentile with no sample (NaN)."""
    return " / ".join(f"{p[q] * 1e3:.1f}" if math.isfinite(p[q]) else "-" for q in _QS)


def _load_table(s: dict[str, Any], res: SimResult) -> Table:
    """One row per instance, or per pool of identical instances when there are many: busy
    share, time-averaged queued / running requests, the prefill queue wait of the prompts it
    prefilled and, disaggregated, the wait for a decode slot (SimResult.waits: after the
    prefill, or before it with decode pre-allocation) and the KV transfers (on the wire) of
    the requests it decoded."""
    insts = s["instances"]
    disagg = any(i["role"] != "agg" for i in insts)
    groups = _groups(insts)
    pooled = any(len(g) > 1 for g in groups)
    t = Table(
        title="pools (means per instance)" if pooled else "instances",
        caption=(
            "queued / running: time-averaged requests waiting / in the batch; KV used: share "
            "of the KV pool in use (time average / largest timeline sample)"
        ),
    )
    heads = ["pool" if pooled else "instance", "utilisation", "queued", "running"]
    heads.append("KV used mean / peak")
    heads.append("prefill queue p50 / p99" if disagg else "queue p50 / p99")
    if disagg:
        heads += ["decode slot wait p50 / p99", "KV transfer p50 / p99"]
    for h in heads:
        t.add_column(h, justify="left" if h in ("pool", "instance") else "right")
    c = res.columns
    done = (c["state"] == DONE) & (np.arange(len(c["state"])) >= res.warmup)
    queue, slot = res.waits(c)  # with decode pre-allocation the slot wait comes first
    for g in groups:
        idx = [i["index"] for i in g]
        row = [_label(g), *(f"{np.mean([i[k] for i in g]):{f}}" for k, f in _MEANS)]
        row.append(_kv_cell(g))
        on_p = done & np.isin(c["p_inst"], idx)
        row.append(_p50_p99(queue[on_p]))
        if disagg:
            on_d = done & np.isin(c["d_inst"], idx)
            row.append(_p50_p99(slot[on_d]))
            row.append(_p50_p99(c["xfer_s"][on_d]))
        t.add_row(*row)
    return t


_MEANS = (("utilisation", ".3f"), ("mean_queue", ",.2f"), ("mean_running", ",.2f"))


def _kv_cell(group: list[dict[str, Any]]) -> str:
    """'41 % / 78 %': the KV pool's time-averaged share in use (mean over the group) and the
    largest sampled share of any of its instances."""
    mean = np.mean([i["mean_kv_used"] for i in group])
    peak = max(i["peak_kv_used_sampled"] for i in group)
    return f"{_pct(mean)} / {_pct(peak)}"


def _pct(x: float) -> str:
    """A share as percent: one decimal below 10 %, none above."""
    return f"{100 * x:.1f} %" if x < 0.1 else f"{100 * x:.0f} %"


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


def write(res: SimResult, o: dict[str, Any]) -> None:
    """Per-request rows (instances by name, states by name), the instances' timeline (CSV, or
    Parquet by extension) and the Chrome trace, where asked for; docs/simulate-outputs.md
    describes them. Each file appears complete or not at all (replaced_on_success)."""
    if o["requests_out"]:
        _write_table(_request_columns(res), o["requests_out"])
    if o["timeline_out"]:
        _write_table(res.timeline_table(), o["timeline_out"])
    if o["trace_out"]:
        try:
            with replaced_on_success(o["trace_out"]) as tmp, open(tmp, "w") as f:
                for chunk in res.chrome_trace_json():  # streamed: no dict per event
                    f.write(chunk)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=o["trace_out"]) from exc


def _request_columns(res: SimResult) -> dict[str, Any]:
    """res.request_table(labels=True) with its label columns as Arrow strings taken from the
    names by code: converting the object arrays of one Python str a row cost ~0.23 s per
    200k rows (measured here), Arrow's take ~1 ms. The same strings, row for row."""
    import pyarrow as pa

    t: dict[str, Any] = res.request_table(labels=False)
    by_idx = sorted(res.instances, key=lambda i: i["index"])
    names = pa.array([str(i["name"]) for i in by_idx] + [""], type=pa.string())
    for k in ("p_inst", "d_inst"):  # index -1 (no instance) -> the last name, ''
        t[k] = names.take(pa.array(np.where(t[k] < 0, len(names) - 1, t[k])))
    t["state"] = pa.array(STATE_NAMES, type=pa.string()).take(pa.array(t["state"]))
    return t


def _write_table(table: dict[str, Any], path: str) -> None:
    """Columns (numpy, or Arrow arrays) -> Parquet (a .parquet name) or CSV with a plain header
    row (names have no commas or quotes, so nothing is quoted; NaN reads 'nan', a missing
    name is empty)."""
    import pyarrow as pa

    def arrow(v: Any) -> Any:  # numpy object arrays of str -> Arrow strings; the rest as is
        text = isinstance(v, np.ndarray) and v.dtype == object
        return pa.array(v, type=pa.string()) if text else v

    cols = {k: arrow(v) for k, v in table.items()}
    try:
        with replaced_on_success(path) as tmp:
            if path.lower().endswith(".parquet"):
                import pyarrow.parquet as pq

                # row groups of 64k rows: the writer holds one encoded group at a time
                # (the default, one group of up to 1M rows, held ~77 MB more at 200k rows)
                pq.write_table(pa.table(cols), tmp, row_group_size=ROW_GROUP_ROWS)
            else:
                import pyarrow.csv as pc

                with open(tmp, "wb") as f:
                    f.write((",".join(cols) + "\n").encode())
                    opts = pc.WriteOptions(include_header=False, quoting_style="none")
                    pc.write_csv(pa.table(cols), f, opts)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc
