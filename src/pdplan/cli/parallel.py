"""`pdplan parallel`: valid layouts for N GPUs, memory and speed, a comm table, the seed rule."""

from __future__ import annotations

from typing import Any

import typer

from pdplan._text import count
from pdplan.cli._common import context_warning, emit, refuse_empty, shape_warning
from pdplan.errors import ConfigError

from ._parallel_render import render as _render

__all__ = ["register"]

GiB = float(2**30)


def _perf_row(spec: Any, gpu: Any, lay: Any, context: int, batch: int) -> dict[str, Any]:
    """Memory and speed of one layout from the lead's cost model (empty when not importable)."""
    try:
        from pdplan.perf.costmodel import CostModel
        from pdplan.perf.memory import plan_memory, pool_tokens_per_seq
    except ImportError:
        return {}
    mp = plan_memory(spec, gpu, lay, check=False)
    short = (mp.used_bytes - mp.hbm_bytes) / GiB
    row: dict[str, Any] = {
        "fits": short < 0,
        "shortfall_gib": round(max(short, 0.0), 2),
        "weights_gib": round(mp.weights_bytes / GiB, 2),
        "kv_capacity_tokens": mp.kv_capacity_tokens,
    }
    if mp.state_tokens_per_seq:  # SSM / linear-attention state per sequence, in KV tokens
        row["state_tokens_per_seq"] = mp.state_tokens_per_seq
    held = pool_tokens_per_seq(spec, lay, mp.kv_dtype, context)  # window layers capped
    b = min(batch, mp.sequences_held(held))  # each with its recurrent state, if any
    if short >= 0 or b < 1:
        row["fits"] = False
        return row
    cm = CostModel(spec, gpu, lay)
    step = cm.decode_step(b, context)
    row.update(
        decode_batch=b,
        decode_step_ms=step * 1e3,
        decode_tps_per_gpu=b / step / lay.gpus,
        prefill_tps_per_gpu=cm.prefill_tps_per_gpu(context),
    )
    return row


def _comm(spec: Any, lay: Any, tokens: int, microbatches: int, node: int) -> dict[str, Any]:
    from pdplan.parallel import comm_table, comm_totals, pp_bubble
    from pdplan.parallel.comm import stage_layers

    ops = comm_table(spec, lay, tokens, gpus_per_node=node)
    return {
        "layout": str(lay),
        "tokens": tokens,
        "ops": [
            {
                "name": o.name,
                "collective": o.collective,
                "where": o.where,
                "group_size": o.group_size,
                "count": o.count,
                "scope": o.scope,
                "layers": o.layers,
                "bytes_per_call": o.bytes_per_call,
                "wire_bytes_per_call": o.wire_bytes_per_call,
                "wire_bytes_per_step": o.wire_bytes_per_step,
            }
            for o in ops
        ],
        # per GPU: per token per layer of the GPU's own pipeline stage
        "totals": comm_totals(ops, tokens, stage_layers(spec.num_layers, lay.pp)),
        "microbatches": microbatches,
        "pp_bubble": pp_bubble(lay.pp, microbatches),
    }


def _no_verdict(rows: list[dict[str, Any]], context: int) -> str:
    """Why no layout can be ranked: none fits (the least short named), none holds one
    sequence of `context` tokens in its KV cache (the roomiest named), or no cost model."""
    short = [r for r in rows if r.get("shortfall_gib")]
    if short and len(short) == len(rows):
        least = min(short, key=lambda r: r["shortfall_gib"])
        return (
            f"no layout fits: even {least['layout']} is short by {least['shortfall_gib']:.1f} "
            "GiB per GPU, so the seed rule's pick cannot run either (more GPUs, a GPU with "
            "more memory or lower-precision weights)"
        )
    # weights fit, but KV capacity (tokens per instance) < one --context sequence
    room = [r for r in rows if r.get("kv_capacity_tokens") and "decode_batch" not in r]
    if room and len(room) + len(short) == len(rows):
        most = max(room, key=lambda r: r["kv_capacity_tokens"])
        cap, state = most["kv_capacity_tokens"], most.get("state_tokens_per_seq", 0)
        held = f" + its recurrent state ({state:,} tokens' worth)" if state else ""
        return (
            f"no layout holds one {context:,}-token sequence{held}: the most KV room, "
            f"{most['layout']}'s {cap:,} tokens, is {context + state - cap:,} tokens short "
            "(more GPUs, a GPU with more memory or a shorter --context)"
        )
    return "cost model unavailable or no layout fits: no comparison with the seed rule"


def _verdict(
    rows: list[dict[str, Any]], seed: str, at: str, context: int
) -> tuple[str | None, str]:
    """Best = highest decode tok/s per GPU among fitting layouts whose TP stays in one node
    (TP over PCIe between NVLink pairs is ranked: the cost model prices it); the message
    names that criterion. On a tie the seed pick wins (e.g. tp8-sp vs tp8)."""
    scored = [r for r in rows if "decode_tps_per_gpu" in r and not r["tp_crosses_nodes"]]
    if not scored:
        return None, _no_verdict(rows, context)
    best = max(scored, key=lambda r: (r["decode_tps_per_gpu"], r["layout"] == seed))
    b = best["layout"]
    crit = f"the highest decode tok/s per GPU of the fitting layouts with TP inside {at}"
    if b == seed:
        return b, f"the cost model agrees: {b} has {crit}"
    seed_row = next((r for r in rows if r["layout"] == seed), None)
    if not seed:
        why = "the seed rule gives no layout for this GPU count"
    elif seed_row is None or "decode_tps_per_gpu" not in seed_row:
        why = "the seed pick does not fit in memory"
    else:
        x = seed_row["decode_tps_per_gpu"] / best["decode_tps_per_gpu"]
        why = f"the seed pick {seed} reaches {x:.2f}x {b}'s decode tok/s per GPU"
        if seed_row["tp_crosses_nodes"]:
            why += ", but its TP crosses nodes, so it is not ranked"
    return b, f"the cost model disagrees: {b} has {crit}; {why}"


def _layout_row(spec: Any, g: Any, lay: Any, context: int, batch: int) -> dict[str, Any]:
    from pdplan.parallel import check_layout

    chk = check_layout(spec, lay, context_len=context, scaleup_domain=g.scaleup_domain,
                       gpus_per_node=g.gpus_per_node)  # fmt: skip
    return {"layout": str(lay), "gpus": lay.gpus, "warnings": list(chk.warnings),
            "tp_crosses_nodes": lay.tp > max(g.scaleup_domain, g.gpus_per_node),
            "tp_beyond_scaleup": lay.tp > g.scaleup_domain, "notes": list(chk.notes),
            **_perf_row(spec, g, lay, context, batch)}  # fmt: skip


def _tp_scope(g: Any) -> str:
    """Where a ranked layout's TP may reach: one node, or an NVLink domain wider than a node."""
    if g.scaleup_domain > g.gpus_per_node:
        return f"one {g.scaleup_domain}-GPU NVLink domain"
    return f"one {g.gpus_per_node}-GPU node"


def _cp_needs_context(lay: Any, context: int) -> None:
    """Refuse a CP layout at a context too short for CP, naming the --context that allows it."""
    from pdplan.parallel import CP_MIN_CONTEXT

    if lay.cp > 1 and context < CP_MIN_CONTEXT:
        raise ConfigError(
            f"--layout {lay}: CP={lay.cp} at --context {context} gains nothing (below "
            f"{CP_MIN_CONTEXT} tokens attention is too small a share to hide the K/V ring "
            f"pass); CP layouts need --context >= {CP_MIN_CONTEXT}"
        )


def _layout_rows(
    spec: Any, g: Any, n: int, context: int, batch: int, max_pp: int
) -> tuple[list[dict[str, Any]], Any]:
    """One row per valid layout of n GPUs (plus the seed rule's pick), and that pick."""
    from pdplan.parallel import check_gpu_count, enumerate_layouts, seed_rule
    from pdplan.parallel.search import SeedPick

    check_gpu_count(spec, n, max_pp, context)  # at once, before any enumeration
    dom = {"scaleup_domain": g.scaleup_domain, "gpus_per_node": g.gpus_per_node}
    lays = enumerate_layouts(spec, n, max_pp=max_pp, context_len=context, **dom)
    try:
        pick = seed_rule(spec, n, g.gpus_per_node, context)
    except ConfigError as e:  # the recipe has no layout here; the enumeration may still
        if not lays:
            raise
        return [_layout_row(spec, g, lay, context, batch) for lay in lays], SeedPick(None, str(e))
    if pick.layout is not None and pick.layout not in lays:  # (seed_rule always gives one)
        lays.append(pick.layout)  # e.g. an SP variant, or a pick with warnings
    return [_layout_row(spec, g, lay, context, batch) for lay in lays], pick


def parallel_cmd(
    model: str = typer.Option(..., "--model", "-m", help="model name or config.json"),
    gpu: str = typer.Option(..., "--gpu", "-g", help="GPU name"),
    gpus: int | None = typer.Option(None, "--gpus", "-n", min=1, help="GPUs per instance"),
    context: int = typer.Option(8192, "--context", min=1, help="tokens of context per sequence"),
    layout: str | None = typer.Option(None, "--layout", help="layout for the comm table"),
    tokens: int | None = typer.Option(None, "--tokens", min=1, help="tokens per step (comm table)"),
    batch: int = typer.Option(64, "--batch", min=1, help="decode batch to compare layouts at"),
    microbatches: int = typer.Option(8, "--microbatches", min=1, help="PP micro-batches (bubble)"),
    max_pp: int = typer.Option(8, "--max-pp", min=1, help="largest PP to list"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List valid layouts for N GPUs, their memory and speed, and the seed rule's pick."""
    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.parallel import Layout, require_valid

    refuse_empty({"--layout": layout})
    spec, g = get_model(model), get_gpu(gpu)
    shape_warning(spec)
    # without --gpus, a --layout sizes the instance: listing a node's layouts (and the seed
    # rule for a node) beside another layout's comm table compared different deployments
    n = gpus or (Layout.parse(layout).gpus if layout else g.gpus_per_node)
    rows, pick = _layout_rows(spec, g, n, context, batch, max_pp)
    past_window = context_warning(spec, context, "--context")
    seed = str(pick.layout) if pick.layout is not None else ""
    shown = Layout.parse(layout) if layout else (pick.layout or Layout.parse(rows[0]["layout"]))
    if layout and gpus and shown.gpus != n:
        raise ConfigError(f"--layout {shown} uses {count(shown.gpus, 'GPU')}, --gpus says {n}")
    _cp_needs_context(shown, context)
    dom = {"scaleup_domain": g.scaleup_domain, "gpus_per_node": g.gpus_per_node}
    chk = require_valid(spec, shown, context_len=context, **dom)
    best, verdict = _verdict(
        rows,
        seed,
        f"{_tp_scope(g)} (decode batch <= {batch}, {context}-token context)",
        context,
    )
    data = {
        "model": spec.name,
        "gpu": g.name,
        "gpus": n,
        "context": context,
        "layouts": rows,
        "comm": _comm(spec, shown, tokens or context, microbatches, g.gpus_per_node),
        "comm_notes": list(chk.errors) + list(chk.warnings) + list(chk.notes),
        "seed_rule": {"layout": seed or None, "reason": pick.reason},
        "best_layout": best,
        "agrees": best == seed,
        "verdict": verdict,
        "warnings": [past_window] if past_window else [],
    }
    emit(data, as_json, _render(data))


def register(app: typer.Typer) -> None:
    """Add `pdplan parallel` to the app."""
    app.command("parallel", help="Valid TP/PP/EP/DP/CP layouts, comm volumes, seed rule.")(
        parallel_cmd
    )
