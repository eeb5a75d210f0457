"""`pdplan models` and `pdplan gpus`: what the built-in catalogs hold, with sources."""

from __future__ import annotations

from typing import Any

import typer

from pdplan.cli._common import emit
from pdplan.errors import ConfigError

__all__ = ["register"]


def models_cmd(
    model: str | None = typer.Argument(None, help="show one model (preset, HF id or config path)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Built-in model presets: parameters, attention, MoE shape, KV bytes per token."""
    from rich.table import Table

    from pdplan.catalog import get_model, list_models

    if model is not None and not model.strip():
        raise ConfigError("empty model name: give a preset, HF id or config path, or none")
    specs = [get_model(model)] if model else [get_model(n) for n in list_models()]
    rows: list[dict[str, Any]] = [
        {
            "name": m.name,
            "hf_id": m.hf_id,
            "layers": m.num_layers,
            "total_params_b": round(m.total_params / 1e9, 2),
            "active_params_b": round(m.active_params / 1e9, 2),
            "attention": m.attention_kind,
            "layer_kinds": _kinds(m.layer_types),
            "experts": f"{m.moe.experts_per_token}/{m.moe.num_experts}" if m.moe else "",
            "weight_dtype": m.weight_dtype,
            "expert_weight_dtype": m.moe_weight_dtype or (m.weight_dtype if m.moe else ""),
            # what each token adds while the context is inside every sliding window (every
            # layer stores it); the same as the long figure for models without windows
            "kv_bytes_per_token_in_window_bf16": round(m.kv_bytes_per_token("bf16")),
            # what each token adds once the sliding windows are full (only full-attention
            # layers still grow): the figure that sizes long-context KV
            "kv_bytes_per_token_long_bf16": round(m.kv_bytes_per_token("bf16", context=_LONG)),
            "source": m.source,
        }
        for m in specs
    ]

    def render(con) -> None:  # type: ignore[no-untyped-def]
        t = Table(title="models (weights not included; shapes from each config.json)")
        t.add_column("name", no_wrap=True)
        cols = ("params B (active)", "layers", "attn", "top-k/E", "weights", "KV B/tok")
        for c in (*cols, "KV B/tok in window"):
            t.add_column(c, justify="right")
        for r in rows:
            t.add_row(
                r["name"],
                f"{r['total_params_b']:g} ({r['active_params_b']:g})",
                str(r["layers"]),
                f"{r['attention']} {r['layer_kinds']}".strip(),
                r["experts"],
                _dtypes(r),
                f"{r['kv_bytes_per_token_long_bf16']:,.0f}",
                _in_window(r),
            )
        con.print(t)
        con.print(
            "KV B/tok: BF16 bytes each token adds at long context (sliding-window layers "
            "full); in window: while the context is within the sliding window (every layer "
            "stores the token)"
        )

    emit({"models": rows}, as_json, render)


# tokens: a context far past any sliding window, so window / context -> 0 below the rounding
# to whole bytes (10**9 left window layers 0.5-0.8 B/token: a window-only model showed 1 B)
_LONG = 10**18


def _in_window(r: dict[str, Any]) -> str:
    """The in-window KV B/tok where it differs from the long-context figure, else ''."""
    a, b = r["kv_bytes_per_token_in_window_bf16"], r["kv_bytes_per_token_long_bf16"]
    return f"{a:,.0f}" if abs(a - b) > 0.5 else ""


def _kinds(layer_types: tuple[str, ...]) -> str:
    """'' when every layer is full attention, else counts per kind: '12 full, 36 linear'."""
    counts = {k: layer_types.count(k) for k in dict.fromkeys(layer_types)}
    if set(counts) == {"full"}:
        return ""
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def gpus_cmd(
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Built-in (and --gpu-file) accelerators: dense peaks, memory, links, sources."""
    from dataclasses import asdict

    from rich.table import Table

    from pdplan.catalog import get_gpu, list_gpus
    from pdplan.catalog.gpus import USER_GPUS

    specs = [get_gpu(n) for n in [*USER_GPUS, *list_gpus()]]

    def render(con) -> None:  # type: ignore[no-untyped-def]
        t = Table(
            title="GPUs (dense TFLOP/s; MAMF = measured BF16 matmul TFLOP/s, the compute cap; "
            "HBM GiB, TB/s; scale-up GB/s per GPU, domain)"
        )
        t.add_column("name", no_wrap=True)
        for c in ("bf16", "MAMF", "fp8", "fp4", "HBM", "TB/s", "up GB/s", "dom", "NIC"):
            t.add_column(c, justify="right")
        for g in specs:
            t.add_row(
                g.name,
                f"{g.bf16_tflops:g}",
                f"{g.mamf_bf16_tflops:g}" if g.mamf_bf16_tflops else "-",
                f"{g.fp8_tflops:g}" if g.fp8_tflops else "-",
                f"{g.fp4_tflops:g}" if g.fp4_tflops else "-",
                f"{g.hbm_gib:g}",
                f"{g.hbm_tbps:g}",
                f"{g.scaleup_gbps:g}",
                str(g.scaleup_domain),
                f"{g.nic_gbps:g}",
            )
        con.print(t)

    emit({"gpus": [asdict(g) for g in specs]}, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("models")(models_cmd)
    app.command("gpus")(gpus_cmd)


def _dtypes(r: dict) -> str:
    """'bf16', or 'bf16 / fp4 experts' for a release whose routed experts have their own."""
    e = r["expert_weight_dtype"]
    return (
        r["weight_dtype"] if e in ("", r["weight_dtype"]) else f"{r['weight_dtype']} / {e} experts"
    )
