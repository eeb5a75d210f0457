"""Tables of `pdplan workload inspect`: length quantiles, rate windows, engine metrics."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from pdplan.cli._common import err_console, kv_table, num, warn

__all__ = ["render_metrics", "render_stats", "warn_stats"]


def _fmt(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _lengths_table(s: dict[str, Any]) -> Table:
    t = Table(title="lengths (tokens)")
    for col in ("", "mean", "p50", "p90", "p99", "max", "total"):
        t.add_column(col, justify="right" if col else "left")
    for name in ("input", "output"):
        d = s[name]
        t.add_row(name, *(_fmt(d[k]) for k in ("mean", "p50", "p90", "p99", "max", "total")))
    return t


def _windows_table(s: dict[str, Any]) -> Table:
    last = s["windows"][-1]
    t = Table(
        title=f"per {s['window_s']:g} s window (drift)",
        caption=f"* the last window: {num(last['duration_s'])} s to the last arrival (its rate)"
        if last["partial"]
        else None,
    )
    heads = ("start s", "requests", "req/s", "in mean", "in p99", "out mean", "out p99", "reuse")
    for h in heads:
        t.add_column(h, justify="right")
    # start times to the window's resolution (1 ms windows need 3 decimals, else all read 0)
    txt = f"{s['window_s']:.6g}"
    dec = (
        min(6, -math.floor(math.log10(s["window_s"]))) if "e" in txt else len(txt.partition(".")[2])
    )
    for w in s["windows"]:
        t.add_row(
            _fmt(float(w["start_s"]), dec) + ("*" if w["partial"] else ""),
            _fmt(w["requests"]),
            _fmt(w["rate_rps"], 2),
            _fmt(w["input"]["mean"], 0),
            _fmt(w["input"]["p99"], 0),
            _fmt(w["output"]["mean"], 0),
            _fmt(w["output"]["p99"], 0),
            _fmt(w.get("reuse_ratio"), 3),
        )
    return t


def _origin(s: dict[str, Any]) -> str | None:
    """The first arrival that times count from: a datetime, or a number (seconds, and as read
    in its time_unit when finer: 1700000000000000123 ns)."""
    if s.get("time_origin"):
        return str(s["time_origin"])
    if s.get("time_origin_s") is None:
        return None
    text = f"{s['time_origin_s']:.6f} s"
    for unit in ("ms", "us", "ns"):
        if s.get(f"time_origin_{unit}") is not None:
            text += f" ({s[f'time_origin_{unit}']} {unit})"
    return text


def render_stats(s: dict[str, Any], con: Console) -> None:
    rows: list[tuple[str, Any]] = [
        ("source", s["source"]),
        ("format", s["format"]),
        ("requests", _fmt(s["requests"])),
        # a trace without timestamps (vidur / ShareGPT length lists) has no span: num()
        # takes only numbers, so it would crash on the None that workload_stats reports
        ("span", "- (no timestamps)" if s["span_s"] is None else num(s["span_s"]) + " s"),
        (
            "mean rate",
            _fmt(s["mean_rate_rps"], 3) + ("" if s["mean_rate_rps"] is None else " req/s"),
        ),
        ("inter-arrival CV", _fmt(s["interarrival_cv"], 3)),
        ("zero-length input / output", f"{s['zero_input']} / {s['zero_output']}"),
        ("skipped rows", _fmt(s.get("skipped_total", 0))),
    ]
    if s.get("prefix"):
        p = s["prefix"]
        cap = "unbounded" if p["lru_blocks"] is None else f"LRU {p['lru_blocks']:,} blocks"
        rows.append(("prefix reuse", f"{p['reuse_ratio']:.3f} of {p['blocks']:,} blocks ({cap})"))
    clipped = s.get("clipped") or {}
    if any(clipped.values()):  # the warnings (on stderr) say at what and why
        rows.append(("clipped", ", ".join(f"{n:,} {role}" for role, n in clipped.items())))
    origin = _origin(s)
    if origin:
        rows.append(("time origin", origin))
    for key in ("by_model", "by_log_type", "sessions"):
        if s.get(key):
            rows.append((key.replace("_", " "), s[key]))
    con.print(kv_table("workload", rows))
    con.print(_lengths_table(s))
    if "windows" in s:
        con.print(_windows_table(s))


def warn_stats(s: dict[str, Any]) -> None:
    """The rows skipped (each reason, its examples) and the warnings of `s`, on stderr: stdout
    holds the tables alone (--json carries them as its `skipped` / `warnings` keys)."""
    for reason, n in (s.get("skipped") or {}).items():
        warn(f"skipped {n} row{'' if n == 1 else 's'} of {s['source']}: {reason}")
    for ex in s.get("skipped_examples") or []:
        err_console.print(f"  e.g. {ex}", highlight=False)
    for msg in s.get("warnings") or []:
        warn(msg)


def render_metrics(m: dict[str, Any], con: Console) -> None:
    t = Table(title=f"{m['source']} ({m['engine']})")
    for col in ("histogram", "metric", "count", "mean", "p50", "p90", "p99"):
        t.add_column(col, justify="left" if col in ("histogram", "metric") else "right")
    for key, d in m.items():
        if isinstance(d, dict):
            t.add_row(
                key,
                d["metric"],
                _fmt(d["count"], 0),
                *(_fmt(d[k], 3) for k in ("mean", "p50", "p90", "p99")),
            )
    con.print(t)
