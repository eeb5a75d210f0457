"""`pdplan ratio`: the xPyD prefill:decode ratio from numbers, from the cost model, from lengths."""

from __future__ import annotations

import importlib.util
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from pdplan._text import count
from pdplan.cli._common import (
    MEM_FRACTION_HELP,
    emit,
    kv_dtype_arg,
    kv_table,
    lengths_context_warning,
    num,
    refuse_empty,
    refuse_ignored,
    shape_warning,
)
from pdplan.errors import ConfigError
from pdplan.plan.layout_pick import DEFAULT_LAYOUT, KV_BATCH_CAP

from ._ratio_setup import check_tpot, lengths_and_means, parse_rates
from ._ratio_setup import instances as _instances

__all__ = ["register"]

# Quick-start defaults: the seed's example A workload on the README's job.
DEFAULT_MODEL, DEFAULT_GPU = "llama-3.1-70b", "h100-sxm"
# Model-mode defaults of options the numbers mode refuses: TPOT target, s (seed s6 sizes D
# "at the target TPOT"; 50 ms is the README's job), engine efficiency set, KV cache dtype.
DEFAULT_TPOT_S, DEFAULT_ENGINE, DEFAULT_KV_DTYPE = 0.05, "vllm", "bf16"
SEED_ISL, SEED_OSL, SEED_P, SEED_D = 4000.0, 500.0, 8000.0, 2000.0  # seed s6, example A
DEFAULT_RHO = 0.7  # target utilisation of each pool, fraction (seed s6: keep rho <= 0.7)


INFEASIBLE_EXIT = 3  # exit status of `pdplan ratio` when no decode batch meets the TPOT target


def _numbers_mode(
    isl: float, osl: float, p: float, d: float, rho: float, qps: float | None, note: str | None
) -> dict[str, Any]:
    from pdplan.plan.ratio import ratio_from_numbers

    r = ratio_from_numbers(isl, osl, p, d, rho, qps)
    data = asdict(r)
    data["mode"] = "numbers"
    data["feasible"] = True  # given numbers: D is taken to meet the TPOT
    data["notes"] = ([note] if note else []) + list(r.notes)
    return data


def _model_mode(opts: dict[str, Any], lens: Any) -> dict[str, Any]:
    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.model_parts import kv_dtype_bytes
    from pdplan.catalog.models import get_model
    from pdplan.perf.memory import pool_tokens_per_seq
    from pdplan.perf.prefill_rate import loaded_prefill_fn
    from pdplan.plan.ratio import infeasible_note, ratio_from_model
    from pdplan.plan.ratio_notes import packing_note
    from pdplan.plan.ratio_qps import qps_dependence

    picked: list[str]  # notes on the layouts picked
    spec, gpu, picked = get_model(opts["model"]), get_gpu(opts["gpu"]), []
    opts["kv_dtype"] = opts["kv_dtype"] or spec.serving_kv_dtype  # else DEFAULT_KV_DTYPE
    kv_dtype_bytes(opts["kv_dtype"])  # a name that is no KV-cache dtype: the KV dtypes listed
    said = shape_warning(spec)
    said += lengths_context_warning(spec, opts["isl"], opts["osl"], lens)
    lp, ld, cm_p, cm_d, mem = _instances(opts, spec, gpu, picked, said)
    kv_cap, state = mem.kv_capacity_tokens, mem.state_tokens_per_seq  # KV pool, tokens
    loaded = loaded_prefill_fn(cm_p)  # P at load: prompts packed to the token budget (H4/H5)
    res = ratio_from_model(
        lambda n: loaded(n).per_prompt_s, cm_d.decode_step, isl=opts["isl"], osl=opts["osl"],
        tpot=opts["tpot"], kv_capacity_tokens=kv_cap, prefill_gpus=lp.gpus,
        decode_gpus=ld.gpus, rho=opts["rho"], qps=opts["qps"], max_batch=cm_d.max_running,
        isl_lengths=None if lens is None else lens.lengths,
        isl_counts=None if lens is None else lens.counts,
        prefill_alone_fn=lambda n: loaded(n).alone_s, state_tokens_per_seq=state,
        pool_tokens_fn=lambda n: pool_tokens_per_seq(spec, ld, opts["kv_dtype"], n),
    )  # fmt: skip
    sweep = qps_dependence(
        res.prefill_s, cm_d.decode_step, osl=opts["osl"], ctx_per_seq=res.ctx_per_seq,
        full_batch=res.decode_batch, prefill_gpus=lp.gpus, decode_gpus=ld.gpus,
        rho=opts["rho"], rates=opts["rates"], prefill_alone_s=res.prefill_alone_s,
    )  # fmt: skip
    head = {"mode": "model", "model": spec.name, "gpu": gpu.name, "engine": opts["engine"],
            "prefill_layout": str(lp), "decode_layout": str(ld), "warnings": said}  # fmt: skip
    out = {**head, **_model_data(res, sweep, lp.gpus, ld.gpus, kv_cap, opts["tpot"])}
    if state:
        out["state_tokens_per_seq"] = state
    notes = out["notes"]
    pack = packing_note(res, loaded(round(res.gpu.isl)), cm_p)
    notes.insert(notes.index(res.notes[0]) + 1, pack)
    if getattr(cm_d, "spec", None) is not None:
        out["spec_decode"] = cm_d.spec.to_dict()
        e = cm_d.spec.tokens_per_step
        notes.append(f"decode drafts ({opts['spec_decode']}): {e:.2f} tokens a step; decode "
                     "times are per accepted token (a step lasts that many)")  # fmt: skip
    bad = infeasible_note(res, f"{gpu.name} with decode {ld}")
    out["notes"] = ([bad] if bad else []) + picked + notes  # infeasible: the first line
    return out


def _model_data(res: Any, sweep: Any, gp: int, gd: int, kv_cap: int, tpot: float) -> dict:
    """JSON of a model-mode answer: the GPU ratio's keys, instances, the QPS sweep."""
    g = {k: v for k, v in asdict(res.gpu).items() if k != "notes"}
    if res.n_prefill_instances is not None:
        g["n_prefill_gpus"] = res.n_prefill_instances * gp
        g["n_decode_gpus"] = res.n_decode_instances * gd
    keep = ("instance_ratio", "instance_ratio_str", "n_prefill_instances", "n_decode_instances",
            "prefill_s", "decode_batch", "decode_step_s", "decode_limit")  # fmt: skip
    out = {**g, **{k: getattr(res, k) for k in keep}}
    out.update(
        feasible=res.feasible,
        tpot_s=tpot,
        kv_capacity_tokens=kv_cap,
        lengths=None if res.lengths is None else asdict(res.lengths),
        qps_sweep={k: v for k, v in asdict(sweep).items() if k != "notes"},
        notes=list(res.notes) + list(sweep.notes),
    )
    return out


def _summary_rows(d: dict[str, Any]) -> list[tuple[str, Any]]:
    """The answer table's rows (job, workload, P, D, the ratio, instances, GPU counts)."""
    model = d["mode"] == "model"
    rows: list[tuple[str, Any]] = [
        ("job", f"{d['model']} on {d['gpu']} ({d['engine']}), prefill {d['prefill_layout']}, "
                f"decode {d['decode_layout']}") if model else ("job", "numbers given"),
        ("workload", f"ISL {num(d['isl'])}, OSL {num(d['osl'])} tokens, rho {d['rho']:g}"),
        ("P (prefill)", f"{d['prefill_tps']:,.0f} tok/s per GPU"),
        ("D (decode)", f"{d['decode_tps']:,.0f} tok/s per GPU"),
        ("GPU-s per request", f"prefill {d['prefill']:.4g} : decode {d['decode']:.4g}"),
        ("N_p : N_d (GPUs)", f"{d['ratio_str']}  ({d['ratio']:.3f})"),
    ]  # fmt: skip
    if model:
        rows.append(("instances", f"{d['instance_ratio_str']} prefill:decode instances "
                                  f"({d['instance_ratio']:.3f})"))  # fmt: skip
        rows.append(("decode batch", f"{d['decode_batch']} at "
                                     f"{d['decode_step_s'] * 1e3:.1f} ms/step"))  # fmt: skip
    if d["qps"] is not None:
        pools = f"{count(d['n_prefill_gpus'], 'prefill GPU')} + "
        pools += count(d["n_decode_gpus"], "decode GPU")
        rows.append((f"at {d['qps']:g} QPS", pools))
    return rows


def _render(data: dict[str, Any]) -> Any:
    def render(c: Console) -> None:
        if not data["feasible"]:  # the infeasible note leads, before the table
            c.print(data["notes"][0], style="bold red", markup=False)
        c.print(kv_table("xPyD ratio", _summary_rows(data)))
        if data.get("qps_sweep"):
            c.print(_sweep_table(data["qps_sweep"]))
        for n in data["notes"][0 if data["feasible"] else 1 :]:
            c.print(f"- {n}", markup=False)

    return render


def _sweep_table(sweep: dict[str, Any]) -> Table:
    t = Table(title=f"QPS dependence (asymptotic GPU ratio {sweep['asymptotic_ratio']:.3f})")
    for col in ("QPS", "prefill inst", "decode inst", "GPU ratio", "decode batch", "D tok/s/GPU",
                f"within {sweep['tolerance']:.0%}"):  # fmt: skip
        t.add_column(col, justify="right")
    for p in sweep["points"]:
        t.add_row(f"{p['qps']:g}", str(p["n_prefill"]), str(p["n_decode"]), f"{p['ratio']:.3f}",
                  f"{p['decode_batch']:.1f}", f"{p['decode_tps_per_gpu']:,.0f}",
                  "yes" if p["within_tol"] else "no")  # fmt: skip
    return t


def ratio_cmd(
    isl: float | None = typer.Option(
        None,
        "--isl",
        help="mean prompt tokens (Tin); from the model: default 4000, the seed's example",
    ),
    osl: float | None = typer.Option(
        None,
        "--osl",
        help="mean output tokens (Tout); from the model: default 500, the seed's example",
    ),
    prefill_tps: float | None = typer.Option(None, "--prefill-tps", help="P, tok/s per GPU"),
    decode_tps: float | None = typer.Option(None, "--decode-tps", help="D, tok/s per GPU"),
    rho_opt: float | None = typer.Option(
        None, "--rho", help=f"target utilisation (default {DEFAULT_RHO:g}; seed: <= 0.7)"
    ),
    qps: float | None = typer.Option(None, "--qps", help="request rate -> GPU counts"),
    model: str | None = typer.Option(None, "--model", "-m", help="model for the cost model"),
    gpu: str | None = typer.Option(None, "--gpu", "-g", help="GPU for the cost model"),
    prefill_layout: str | None = typer.Option(
        None,
        "--prefill-layout",
        help=f"e.g. tp4 (default: {DEFAULT_LAYOUT}, wider if it won't fit with a prompt's KV)",
    ),
    decode_layout: str | None = typer.Option(
        None,
        "--decode-layout",
        help=f"e.g. tp8 (default: {DEFAULT_LAYOUT}, wider if it won't fit with KV for up to "
        f"{KV_BATCH_CAP} requests)",
    ),
    tpot: float | None = typer.Option(
        None, "--tpot", help=f"decode TPOT target, seconds (default {DEFAULT_TPOT_S:g})"
    ),
    engine: str | None = typer.Option(
        None, "--engine", help=f"engine efficiency set (default {DEFAULT_ENGINE})"
    ),
    kv_dtype: str | None = typer.Option(
        None,
        "--kv-dtype",
        callback=kv_dtype_arg,
        help="KV cache dtype: bf16, fp8 (fp8_e4m3 / fp8_e5m2), ... (default or auto: the "
        f"checkpoint's KV directive, else {DEFAULT_KV_DTYPE})",
    ),
    spec_decode: str | None = typer.Option(
        None, "--spec-decode", help="decode drafts METHOD:K[:ACCEPTANCE], e.g. mtp:3"
    ),
    mem_fraction: float | None = typer.Option(
        None, "--mem-fraction", min=0.05, max=1.0, help=MEM_FRACTION_HELP
    ),
    lengths: Path | None = typer.Option(None, "--lengths", help="lengths / histogram / trace"),
    isl_dist: str | None = typer.Option(None, "--isl-dist", help="prompt lengths, '500,4000'"),
    rates: str | None = typer.Option(None, "--rates", help="QPS values for the sweep"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """N_p : N_d = (Tin/P) : (Tout/D), from numbers or from the cost model (default)."""
    refuse_empty({"--model": model, "--gpu": gpu, "--engine": engine, "--kv-dtype": kv_dtype,
                  "--spec-decode": spec_decode, "--rates": rates, "--prefill-layout":
                  prefill_layout, "--decode-layout": decode_layout})  # fmt: skip
    lens, isl, osl = lengths_and_means(lengths, isl_dist, isl, osl)
    rho = DEFAULT_RHO if rho_opt is None else rho_opt
    if (prefill_tps is None) != (decode_tps is None):
        raise ConfigError(
            "give both --prefill-tps and --decode-tps (or neither, to use the cost model)"
        )
    if prefill_tps is not None and decode_tps is not None:
        model_only = {"--model": model, "--gpu": gpu, "--tpot": tpot, "--engine": engine,
                      "--kv-dtype": kv_dtype, "--prefill-layout": prefill_layout,
                      "--decode-layout": decode_layout, "--rates": rates,
                      "--spec-decode": spec_decode, "--mem-fraction": mem_fraction}  # fmt: skip
        _refuse_ignored(model_only, isl, osl)
        if qps is None:  # the ratio itself does not depend on rho: only GPU counts at a QPS do
            refuse_ignored({"--rho": rho_opt}, "with --qps (GPU counts at that utilisation)")
        assert isl is not None and osl is not None  # _refuse_ignored asks for them
        data = _numbers_mode(isl, osl, prefill_tps, decode_tps, rho, qps, _reading(lens))
        emit(data, as_json, _render(data))
        return
    check_tpot(DEFAULT_TPOT_S if tpot is None else tpot)
    opts: dict[str, Any] = {"model": model or DEFAULT_MODEL, "gpu": gpu or DEFAULT_GPU,
            "engine": engine or DEFAULT_ENGINE, "prefill_layout": prefill_layout,
            "decode_layout": decode_layout, "isl": SEED_ISL if isl is None else isl,
            "osl": SEED_OSL if osl is None else osl, "rho": rho, "qps": qps,
            "tpot": DEFAULT_TPOT_S if tpot is None else tpot, "rates": parse_rates(rates),
            "kv_dtype": kv_dtype, "spec_decode": spec_decode,
            "mem_fraction": mem_fraction}  # fmt: skip
    if importlib.util.find_spec("pdplan.perf.costmodel") is None:
        note = "cost model not available: using the seed's P=8000, D=2000 tok/s/GPU"
        data = _numbers_mode(opts["isl"], opts["osl"], SEED_P, SEED_D, rho, qps, note)
    else:
        data = _model_mode(opts, lens)
    if _reading(lens):
        data["notes"].insert(0 if data["feasible"] else 1, _reading(lens))
    emit(data, as_json, _render(data))
    if not data["feasible"]:  # printed in full, but a plan that misses its SLO is not a success
        raise typer.Exit(INFEASIBLE_EXIT)


def _refuse_ignored(model_only: dict[str, Any], isl: float | None, osl: float | None) -> None:
    """Numbers mode (P and D given): refuse the options it would ignore (those that feed the
    cost model), and ask for the lengths it needs."""
    if {k for k, v in model_only.items() if v is not None} & {"--model", "--gpu"}:
        raise ConfigError("give --prefill-tps/--decode-tps or --model/--gpu, not both")
    refuse_ignored(model_only, "when the cost model computes P and D, not with "
                   "--prefill-tps/--decode-tps given")  # fmt: skip
    if isl is None or osl is None:
        raise ConfigError("--prefill-tps/--decode-tps need --isl and --osl (or --lengths)")


def _reading(lens: Any) -> str | None:
    """How a --lengths / --isl-dist input was read (histogram, list, trace), for the notes."""
    return None if lens is None else lens.reading or None


def register(app: typer.Typer) -> None:
    """Add `pdplan ratio` to the app."""
    app.command("ratio", help="The xPyD prefill:decode ratio (seed s6), and where it breaks.")(
        ratio_cmd
    )
