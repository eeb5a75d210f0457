"""`pdplan estimate`'s table: setup, layout, latencies, throughput, KV room."""

from __future__ import annotations

from typing import Any

from pdplan._text import count, gpus
from pdplan.cli._common import kv_table, num

__all__ = ["render"]


def render(out: dict[str, Any]) -> Any:
    def render(con) -> None:  # type: ignore[no-untyped-def]
        e = out["estimate"]
        rows = [
            ("model / gpu / engine", f"{out['model']} / {out['gpu']} / {out['engine']}"),
            (
                "setup",
                f"{out['mode']}, ISL {out['isl']}, OSL {out['osl']}, "
                f"{count(out['concurrency'], 'client')}, {gpus(out['gpus'])}",
            ),
            ("layout", _layout_text(out)),
            ("TTFT", _ms(e["ttft_ms"])),
            (
                "TPOT",
                f"{e['tpot_ms']:.2f} ms" if out["osl"] > 1 else "n/a (one output token: no gap)",
            ),
            (
                "throughput",
                f"{e['throughput_rps']:.2f} req/s, "
                f"{num(out['output_tokens_per_s_per_gpu'])} output tok/s/GPU",
            ),
            ("mean decode batch", f"{e['decode_batch']:.1f}"),
            (
                "KV capacity",
                f"{out['memory']['kv_capacity_tokens']:,} tokens per instance "
                f"({out['memory']['kv_dtype']} KV{_state_text(out['memory'])})",
            ),
            ("KV-limited", str(e["kv_limited"])),
        ]
        if out["mode"] == "disagg":
            rows.append(("KV transfer", _kv_text(out)))
        if out.get("spec_decode"):
            sd = out["spec_decode"]
            rows.insert(4, ("speculative decoding", f"{sd['method']}, {sd['draft_tokens']} "
                            f"drafts at acceptance {sd['acceptance']:g}: "
                            f"{sd['tokens_per_step']:.2f} tokens a step"))  # fmt: skip
        con.print(kv_table("pdplan estimate (steady state, closed loop)", rows))
        if out.get("layout_note"):
            con.print(f"note: {out['layout_note']}", markup=False)

    return render


def _ms(ms: float) -> str:
    """'812.4 ms'; from 10 s on in seconds with separators ('37,544,976 s'), where a queue of
    clients past the KV pool would otherwise print an unreadable run of digits."""
    return f"{ms:.1f} ms" if ms < 10_000 else f"{ms / 1000:,.0f} s"


def _layout_text(out: dict[str, Any]) -> str:
    """The instance layout(s) and, disaggregated, the instance counts."""
    if out["mode"] == "agg":
        return str(out["layout"])
    return (
        f"prefill {out['prefill_layout']} x {out['prefill_workers']}, "
        f"decode {out['decode_layout']} x {out['decode_workers']}"
    )


def _kv_text(out: dict[str, Any]) -> str:
    """The KV transfer per request and the path it takes (plan.kv_route: NVLink when P and D
    share a node as `simulate` places them, else the NIC; mixed: the mean over P -> D pairs)."""
    ms, path = out["kv_transfer_ms"], out.get("kv_path", "nic")
    how = {
        "nvlink": "over NVLink (P and D on one node)",
        "nic": "over the NIC (P and D on other nodes)",
    }
    text = how.get(
        path, f"{out.get('kv_nvlink_share', 0.0):.0%} of P -> D pairs over NVLink, the rest NIC"
    )
    return f"{ms:.2f} ms per request, {text}"


def _state_text(mem: dict[str, Any]) -> str:
    """', each sequence's recurrent state counted' for hybrid (SSM / linear) models."""
    b = mem.get("state_bytes_per_seq_per_gpu") or 0
    return f"; each sequence's {b / 1e6:,.0f} MB/GPU recurrent state counted" if b else ""
