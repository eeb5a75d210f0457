"""`pdplan estimate`: steady-state TTFT / TPOT for C closed-loop clients of fixed ISL/OSL."""

from __future__ import annotations

from typing import Any

import typer

from pdplan.cli._common import (
    MEM_FRACTION_HELP,
    context_warning,
    emit,
    kv_dtype_arg,
    refuse_empty,
    shape_warning,
    warn,
)
from pdplan.errors import ConfigError, DoesNotFitError
from pdplan.plan.layout_pick import DEFAULT_LAYOUT_HELP

from ._estimate_checks import check_mode_options as _check_mode_options
from ._estimate_checks import one_instance as _one_instance
from ._estimate_render import render as _render

__all__ = ["register"]


def estimate_cmd(
    model: str = typer.Option("llama-3.1-70b", help="preset name, HF id or path to config.json"),
    gpu: str = typer.Option("h100-sxm", help="GPU name (`pdplan gpus` lists them)"),
    layout: str | None = typer.Option(
        None,
        help="agg: one instance's layout, parts joined with '-', e.g. tp4, tp8-ep8, dp8-ep8 "
        f"(default: {DEFAULT_LAYOUT_HELP})",
    ),
    isl: int = typer.Option(4000, min=1, help="input (prompt) tokens per request"),
    osl: int = typer.Option(500, min=1, help="output tokens per request"),
    concurrency: int = typer.Option(32, "--concurrency", "-c", min=1, help="closed-loop clients"),
    mode: str = typer.Option("agg", help="agg or disagg"),
    prefill_layout: str | None = typer.Option(
        None, help="disagg: prefill instance layout (default: as --layout's default)"
    ),
    decode_layout: str | None = typer.Option(
        None, help="disagg: decode instance layout (default: as --layout's default)"
    ),
    prefill_workers: int | None = typer.Option(
        None, min=1, help="disagg: prefill instances (default: 1)"
    ),
    decode_workers: int | None = typer.Option(
        None, min=1, help="disagg: decode instances (default: 1)"
    ),
    engine: str = typer.Option("vllm", help="vllm, sglang or trtllm (sets efficiencies)"),
    weight_dtype: str | None = typer.Option(
        None, help="bf16, fp8, fp4 (NVFP4), mxfp4, int4, w4a8 (default: checkpoint)"
    ),
    kv_dtype: str | None = typer.Option(
        None,
        callback=kv_dtype_arg,
        help="KV cache dtype: bf16, fp8 (fp8_e4m3 / fp8_e5m2), ... (default or auto: the "
        "checkpoint's KV directive, else bf16)",
    ),
    rounds: float | None = typer.Option(
        None,
        min=1.0,
        help="benchmark length in rounds of C requests; its start-up burst is averaged into "
        "TTFT (default: the engine's calibrated value; a large value gives pure steady state)",
    ),
    mem_fraction: float | None = typer.Option(
        None, "--mem-fraction", min=0.05, max=1.0, help=MEM_FRACTION_HELP
    ),
    spec_decode: str | None = typer.Option(
        None,
        "--spec-decode",
        help="speculative decoding METHOD:K[:ACCEPTANCE] (mtp or eagle, K draft tokens a "
        "step, each accepted with probability ACCEPTANCE, default 0.7); TPOT per token",
    ),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Predict TTFT and TPOT at steady state (what fixed-concurrency benchmarks measure)."""
    from pdplan.catalog import get_gpu, get_model
    from pdplan.catalog.model_parts import kv_dtype_bytes
    from pdplan.perf.spec_decode import parse_spec

    refuse_empty(
        {"--weight-dtype": weight_dtype, "--kv-dtype": kv_dtype, "--spec-decode": spec_decode,
         "--layout": layout, "--prefill-layout": prefill_layout, "--decode-layout": decode_layout}
    )  # fmt: skip
    if mode not in ("agg", "disagg"):
        raise ConfigError(f"--mode must be agg or disagg, not {mode!r}")
    disagg = mode == "disagg"
    _check_mode_options(
        mode,
        {"--layout": layout},
        {
            "--prefill-layout": prefill_layout,
            "--decode-layout": decode_layout,
            "--prefill-workers": prefill_workers,
            "--decode-workers": decode_workers,
        },
    )
    spec, g = get_model(model), get_gpu(gpu)
    kv_dtype = kv_dtype or spec.serving_kv_dtype  # as engines serve it when none is given
    kv_dtype_bytes(kv_dtype)  # a name that is no KV-cache dtype: the KV dtypes listed
    said = shape_warning(spec)
    said += [w for w in [context_warning(spec, isl + osl, "a request")] if w]
    said += _vendor(g)
    given = {"--prefill-layout": prefill_layout, "--decode-layout": decode_layout}
    needs = _kv_needs(isl, osl, concurrency, decode_workers or 1)
    sd = parse_spec(spec_decode or "")  # checked before any layout is picked
    lays, note = _layouts(
        spec, g, given if disagg else {"--layout": layout}, (weight_dtype, kv_dtype), needs,
        0 if sd is None else sd.draft_layers, (engine, mem_fraction),
    )  # fmt: skip
    said += _warn_layouts(spec, g, lays, isl, osl)
    said += _idle_workers(concurrency, prefill_workers, decode_workers)
    kw = {
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "prefill_workers": prefill_workers or 1,
        "decode_workers": decode_workers or 1,
        "engine": engine,
        "weight_dtype": weight_dtype,
        "kv_dtype": kv_dtype,
        "rounds": rounds,
        "spec_decode": spec_decode,
        "mem_fraction": mem_fraction,
    }
    out = _estimate(spec, g, lays, kw)
    out["warnings"] = said  # also on stderr, as `pdplan ratio` gives them
    if note:
        out["layout_note"] = note
    emit(out, as_json, _render(out))


def _vendor(g: Any) -> list[str]:
    """The caution for a GPU whose vendor the efficiencies were not fitted on, warned."""
    from pdplan.perf.efficiency import vendor_caveat

    caveat = vendor_caveat(g.name, g.vendor, g.fp16_only)
    if caveat:
        warn(caveat)
    return [caveat] if caveat else []


def _kv_needs(isl: int, osl: int, clients: int, decode_workers: int) -> dict[str, Any]:
    """KV room each default layout must leave (plan.layout_pick.KVNeed): a prefill instance
    one prompt; an instance that decodes min(KV_BATCH_CAP, its clients) requests of ISL + OSL
    (fewer where that KV outweighs the weights)."""
    from pdplan.plan.layout_pick import KV_BATCH_CAP, KVNeed

    per_decode = -(-clients // decode_workers)  # clients per decode instance, rounded up
    return {
        "--layout": KVNeed(isl + osl, min(KV_BATCH_CAP, clients), "agg"),
        "--prefill-layout": KVNeed(isl, 1, "prefill"),
        "--decode-layout": KVNeed(isl + osl, min(KV_BATCH_CAP, per_decode), "decode"),
    }


def _layouts(
    spec: Any,
    gpu: Any,
    given: dict[str, str | None],
    dtypes: tuple[str | None, str],
    needs: dict[str, Any],
    drafts: int = 0,
    sizing: tuple[str | None, float | None] = (None, None),
) -> tuple[dict[str, Any], str | None]:
    """Each layout option's Layout: as given (checked), else the default `pdplan ratio` picks
    (plan.layout_pick.default_layout, holding `needs`' KV room); and why the default is not
    tp4, when it is not. `dtypes`: (weight dtype or None, KV dtype); `drafts`: draft-head
    layers a decoding instance holds (--spec-decode); `sizing`: (engine, --mem-fraction), how
    each candidate's KV pool is sized."""
    from pdplan.plan.layout_pick import default_layout
    from pdplan.plan.steady import valid_layout

    for opt, text in given.items():
        if text:
            _one_instance(opt, text)
    picked: list[str] = []
    wd, kvd = dtypes
    lays = {
        opt: valid_layout(spec, gpu, text)
        if text
        else default_layout(
            spec,
            gpu,
            kvd,
            picked,
            wd,
            need=needs[opt],
            draft_layers=drafts,  # a prefill instance runs (and holds) the head too
            engine=sizing[0],
            mem_fraction=sizing[1],
        )
        for opt, text in given.items()
    }
    return lays, "; ".join(picked) if picked else None


def _warn_layouts(spec: Any, gpu: Any, lays: dict[str, Any], isl: int, osl: int) -> list[str]:
    """Each layout's cautions (plan.steady.layout_warnings: TP past the scale-up domain, CP on
    short prompts), on stderr as `pdplan ratio` gives them; CP is judged at the prompt (ISL),
    or at ISL + OSL on a decode instance."""
    from pdplan.plan.steady import layout_warnings

    runs = [(lay, isl + osl if opt == "--decode-layout" else isl) for opt, lay in lays.items()]
    said = layout_warnings(spec, gpu, runs)
    for w in said:
        warn(w)
    return said


def _idle_workers(clients: int, prefill: int | None, decode: int | None) -> list[str]:
    """More instances of a pool than clients: the rest can never hold a request (said, as
    their GPUs still count in the per-GPU throughput)."""
    said = []
    for flag, n in (("--prefill-workers", prefill), ("--decode-workers", decode)):
        if n is not None and n > clients:
            said.append(
                f"{flag} {n:,} for {clients:,} clients: at most {clients:,} of those instances "
                "can hold a request at once; the others sit idle and count in the per-GPU "
                "throughput"
            )
            warn(said[-1])
    return said


def _estimate(spec: Any, gpu: Any, lays: dict[str, Any], kw: dict[str, Any]) -> dict[str, Any]:
    """estimate_deployment; when a layout does not fit, the error says what would."""
    from pdplan.plan.steady import estimate_deployment

    try:
        return estimate_deployment(
            spec,
            gpu,
            layout=lays.get("--layout"),
            prefill_layout=lays.get("--prefill-layout"),
            decode_layout=lays.get("--decode-layout"),
            **kw,
        )
    except ConfigError as e:
        try:
            hints = _fit_hints(spec, gpu, lays, kw)
        except ConfigError:  # e.g. an unknown dtype: the first error says it
            hints = ""
        if not hints:
            raise
        need, have = getattr(e, "need_bytes", 0.0), getattr(e, "have_bytes", 0.0)
        raise DoesNotFitError(f"{e}; {hints}", need_bytes=need, have_bytes=have) from None


def _fit_hints(spec: Any, gpu: Any, lays: dict[str, Any], kw: dict[str, Any]) -> str:
    """For each layout that does not fit (weights, or KV for one request where the instance
    decodes), what would: a wider TP/EP layout in the node, FP8 weights or FP8 KV."""
    from pdplan.plan.layout_fit import fit_hint, fits
    from pdplan.plan.layout_pick import KVSizing

    wd, kvd = kw["weight_dtype"], kw["kv_dtype"]
    sizing = KVSizing(kw["engine"], kw["mem_fraction"])  # as the engine sizes its KV pool
    hints = []
    for opt, lay in lays.items():
        pre = opt == "--prefill-layout"  # holds one prompt (ISL) until sent, else ISL + OSL
        n, what = (kw["isl"], "prompt") if pre else (kw["isl"] + kw["osl"], "request")
        if not fits(spec, gpu, lay, weight_dtype=wd, kv_dtype=kvd, tokens=n, sizing=sizing):
            hint = fit_hint(spec, gpu, lay, opt, weight_dtype=wd, kv_dtype=kvd, tokens=n,
                            what=what, sizing=sizing)  # fmt: skip
            hints.append(f"{opt} {lay}: {hint}")
    return "; ".join(hints)


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate_cmd)
