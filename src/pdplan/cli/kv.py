"""`pdplan kv`: bytes and time of moving one prompt's KV cache from prefill to decode (seed s5)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import typer
from rich.console import Console

from pdplan._text import count
from pdplan.cli._common import (
    context_warning,
    emit,
    kv_dtype_arg,
    kv_table,
    num,
    refuse_empty,
    shape_warning,
)
from pdplan.errors import ConfigError

__all__ = ["register"]


def _layout(text: str | None) -> Any:
    from pdplan.parallel.layout import Layout

    return Layout.parse(text) if text else None


_TRANSIT_HELP = "send the KV in a narrower dtype (fp8, fp4, ...)"


def kv_cmd(
    model: str = typer.Option("llama-3.1-70b", "--model", "-m", help="model name or config.json"),
    tokens: int = typer.Option(4000, "--tokens", "-n", help="prompt tokens to transfer"),
    kv_dtype: str | None = typer.Option(
        None,
        "--kv-dtype",
        callback=kv_dtype_arg,
        help="KV cache dtype: bf16, fp16, fp8 (fp8_e4m3 / fp8_e5m2), int8, fp4 (default or "
        "auto: the checkpoint's)",
    ),
    transit_dtype: str | None = typer.Option(None, "--transit-dtype", help=_TRANSIT_HELP),
    path: str = typer.Option("nic", "--path", help="nic | nvlink | pcie"),
    gpu: str | None = typer.Option(None, "--gpu", "-g", help="GPU whose link rates to use"),
    link_gbps: float | None = typer.Option(None, "--link-gbps", help="link line rate, Gb/s"),
    efficiency: float | None = typer.Option(None, "--efficiency", help="share of line rate"),
    prefill_layout: str | None = typer.Option(None, "--prefill-layout", help="e.g. tp4"),
    decode_layout: str | None = typer.Option(None, "--decode-layout", help="e.g. tp8"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """KV bytes per token / per layer / per GPU shard and the transfer time over one path."""
    from pdplan.catalog.models import get_model
    from pdplan.perf.kv_transfer import kv_transfer, seed_kv_example

    refuse_empty({"--gpu": gpu, "--prefill-layout": prefill_layout,
                  "--decode-layout": decode_layout})  # fmt: skip
    if link_gbps is not None and not 0 < link_gbps < math.inf:  # nan fails both comparisons
        raise ConfigError(f"--link-gbps={link_gbps} must be a finite line rate > 0 Gb/s")
    spec = get_model(model)
    shape_warning(spec)
    kv_dtype = kv_dtype or spec.serving_kv_dtype  # its KV directive (NVFP4 exports: fp8), else bf16
    gspec = None
    if gpu:
        from pdplan.catalog.gpus import get_gpu

        gspec = get_gpu(gpu)
    _check_layouts(spec, gspec, prefill_layout, decode_layout)
    context_warning(spec, tokens, "a prompt")
    kv = kv_transfer(
        spec, tokens, kv_dtype=kv_dtype, transit_dtype=transit_dtype, path=path, gpu=gspec,
        link_gbps=link_gbps, efficiency=efficiency, prefill_layout=_layout(prefill_layout),
        decode_layout=_layout(decode_layout),
    )  # fmt: skip
    seed = seed_kv_example(spec) if spec.name == "llama-3.1-70b" else None
    data: dict[str, Any] = {"bytes": round(kv.total_bytes), "time_ms": kv.time_ms, **asdict(kv)}
    data["notes"] = notes = list(kv.notes)
    if seed is not None:
        data["seed"] = {"claimed_bytes": seed.seed_bytes, "claimed_ms": seed.seed_ms,
                        "bytes": seed.bytes, "ms": seed.ms, "factor": seed.factor}  # fmt: skip
    emit(data, as_json, lambda c: _render(c, kv, seed, notes))


def _check_layouts(spec: Any, gpu: Any, *layouts: str | None) -> None:
    """Refuse a layout the model cannot be split by ('TP=3 does not divide 64 attention
    heads'), as every other command does."""
    from pdplan.parallel.checks import require_valid

    kw = {} if gpu is None else {"scaleup_domain": gpu.scaleup_domain}
    for text in layouts:
        if text:
            require_valid(spec, _layout(text), **kw)


def _render(c: Console, kv: Any, seed: Any, notes: list[str]) -> None:
    plus = " = tokens x KV per token + fixed state" if kv.state_bytes else ""
    rows = [
        ("model", f"{kv.model} ({count(kv.tokens, 'token')}, KV {kv.kv_dtype}, "
                  f"sent as {kv.transit_dtype})"),
        ("KV per token", f"{kv.bytes_per_token:,.0f} B ({kv.bytes_per_token_layer:,.0f} B per "
                         "full-attention layer)"),
        *_state_rows(kv),
        ("KV of the prompt", f"{kv.total_bytes:,.0f} B = {num(kv.total_bytes / 1e9)} GB{plus}"),
        ("links", f"{count(kv.senders, 'sender')} -> {count(kv.receivers, 'receiver')}, "
                  f"{num(kv.shard_bytes / 1e6)} MB per sender"),
        ("path", f"{kv.path} {kv.link_gbps:g} Gb/s x {kv.efficiency:g} efficiency "
                 f"+ {kv.latency_s * 1e6:.0f} us"),
        ("transfer time", f"{num(kv.time_ms)} ms"),
    ]  # fmt: skip
    c.print(kv_table("KV transfer", rows))
    for n in notes:
        c.print(f"note: {n}", markup=False)
    if seed is not None:
        c.print(
            f"seed s5 says a 4,000-token FP16 prompt is ~{seed.seed_bytes / 1e6:.0f} MB / "
            f"~{seed.seed_ms:.0f} ms over 200 Gb/s; the real shape gives {seed.bytes:,.0f} B "
            f"({seed.factor:.1f}x) and {seed.ms:.1f} ms at line rate"
        )


def _state_rows(kv: Any) -> list[tuple[str, str]]:
    """The fixed recurrent / SSM state of hybrid models, apart from the per-token KV."""
    if not kv.state_bytes:
        return []
    return [("fixed state", f"{kv.state_bytes:,.0f} B per sequence (linear-attention / SSM "
                            "layers), whatever the prompt length")]  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add `pdplan kv` to the app."""
    app.command("kv", help="KV-cache transfer size and time (seed s5 and its correction).")(kv_cmd)
