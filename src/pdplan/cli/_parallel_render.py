"""`pdplan parallel`'s tables: the valid layouts with memory and speed, one layout's comm."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["render"]

_LAYOUT_COLS = ("layout", "GPUs", "weights GiB/GPU", "KV tokens", "decode batch", "step ms",
                "decode tok/s/GPU", "prefill tok/s/GPU", "warnings")  # fmt: skip


def _perf_cells(r: dict[str, Any]) -> tuple[str, str, str, str]:
    """Decode batch, step ms, decode and prefill tok/s per GPU; or why there are none."""
    if "decode_batch" in r:
        return (f"{r['decode_batch']}", f"{r['decode_step_ms']:.1f}",
                f"{r['decode_tps_per_gpu']:,.0f}", f"{r['prefill_tps_per_gpu']:,.0f}")  # fmt: skip
    why = "-"
    if r.get("fits") is False:
        short = r["shortfall_gib"]
        why = f"short {short:.1f} GiB" if short > 0 else "no KV room"
    return why, "-", "-", "-"


def _layouts_table(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="valid layouts")
    for col in _LAYOUT_COLS:
        t.add_column(
            col,
            justify="left" if col in ("layout", "warnings") else "right",
            no_wrap=col == "layout",
        )
    for r in rows:
        kv = f"{r['kv_capacity_tokens']:,}" if "kv_capacity_tokens" in r else "-"
        warn = "; ".join(w.split(":")[0] for w in r["warnings"])
        t.add_row(r["layout"], str(r["gpus"]), str(r.get("weights_gib", "-")), kv,
                  *_perf_cells(r), warn)  # fmt: skip
    return t


def _comm_table(c: dict[str, Any]) -> Table:
    t = Table(
        title=f"communication of {c['layout']} per step of {c['tokens']} tokens "
        f"(message = bytes per GPU per call; sent = ring-algorithm bytes each GPU sends)"
    )
    for col in ("op", "collective", "strategy", "group", "calls", "message B", "sent B/step"):
        t.add_column(
            col,
            justify="right" if col in ("group", "calls") or " B" in col else "left",
            no_wrap=" B" in col,
        )
    for o in c["ops"]:
        calls = (
            f"{o['count']}/layer x {o['layers']}"
            if o["scope"] == "layer"
            else f"{o['count']}/step"  # a PP send: the step's activations, in m micro-batches
        )
        t.add_row(
            o["name"],
            o["collective"],
            o["where"],
            str(o["group_size"]),
            calls,
            f"{o['bytes_per_call']:,.0f}",
            f"{o['wire_bytes_per_step']:,.0f}",
        )
    return t


def render(data: dict[str, Any]) -> Any:
    def render(con: Console) -> None:
        con.print(_layouts_table(data["layouts"]))
        c = data["comm"]
        con.print(_comm_table(c))
        tot = c["totals"]
        con.print(
            f"total sent {tot['bytes_per_step']:,.0f} B per GPU per step = "
            f"{tot['bytes_per_token_layer']:,.0f} B per token per layer; PP bubble "
            f"{c['pp_bubble']:.1%} at {c['microbatches']} micro-batches "
            f"((p-1)/(m+p-1))"
        )
        for n in data["comm_notes"]:
            con.print(f"note: {n}", markup=False)
        con.print(data["seed_rule"]["reason"], markup=False)
        con.print(data["verdict"], markup=False)

    return render
