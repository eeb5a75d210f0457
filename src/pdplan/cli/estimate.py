"""`pdplan estimate`: steady-state TTFT / TPOT for C closed-loop clients of fixed ISL/OSL."""

from __future__ import annotations

import typer

from pdplan.cli._common import emit, kv_table
from pdplan.errors import ConfigError

__all__ = ["register"]


def estimate_cmd(
    model: str = typer.Option("llama-3.1-70b", help="preset name, HF id or path to config.json"),
    gpu: str = typer.Option("h100-sxm", help="GPU name (see `pdplan parallel --help`)"),
    layout: str = typer.Option("tp4", help="aggregated layout, e.g. tp4, tp8-ep8, dp8-ep8"),
    isl: int = typer.Option(4000, min=1, help="input (prompt) tokens per request"),
    osl: int = typer.Option(500, min=1, help="output tokens per request"),
    concurrency: int = typer.Option(32, "--concurrency", "-c", min=1, help="closed-loop clients"),
    mode: str = typer.Option("agg", help="agg or disagg"),
    prefill_layout: str = typer.Option("tp4", help="disagg: prefill instance layout"),
    decode_layout: str = typer.Option("tp4", help="disagg: decode instance layout"),
    prefill_workers: int = typer.Option(1, min=1, help="disagg: prefill instances"),
    decode_workers: int = typer.Option(1, min=1, help="disagg: decode instances"),
    engine: str = typer.Option("vllm", help="vllm, sglang or trtllm (sets efficiencies)"),
    weight_dtype: str | None = typer.Option(
        None, help="bf16, fp8, fp4, int4 (default: checkpoint)"
    ),
    kv_dtype: str = typer.Option("bf16", help="KV cache dtype: bf16, fp8"),
    rounds: float | None = typer.Option(
        None,
        min=1.0,
        help="benchmark length in rounds of C requests; its start-up burst is averaged into "
        "TTFT (default: the engine's calibrated value; a large value gives pure steady state)",
    ),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Predict TTFT and TPOT at steady state (what fixed-concurrency benchmarks measure)."""
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.checks import require_valid
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.estimate import estimate_agg, estimate_disagg
    from pdplan.perf.kv_transfer import kv_transfer
    from pdplan.perf.memory import plan_memory

    m, g = get_model(model), get_gpu(gpu)

    def valid(text: str) -> Layout:
        lay = Layout.parse(text)
        require_valid(m, lay, scaleup_domain=g.scaleup_domain, gpus_per_node=g.gpus_per_node)
        return lay

    if mode not in ("agg", "disagg"):
        raise ConfigError(f"--mode must be agg or disagg, not {mode!r}")
    out: dict = {
        "model": m.name,
        "gpu": g.name,
        "engine": engine,
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "mode": mode,
    }
    if mode == "agg":
        lay = valid(layout)
        mem = plan_memory(m, g, lay, weight_dtype, kv_dtype, context=isl + osl)
        cm = CostModel(m, g, lay, engine, weight_dtype, kv_dtype)
        est = estimate_agg(
            cm, isl, osl, concurrency, kv_capacity_tokens=mem.kv_capacity_tokens, rounds=rounds
        )
        out |= {"layout": str(lay), "gpus": lay.gpus, "memory": mem.to_dict()}
    else:
        pl, dl = valid(prefill_layout), valid(decode_layout)
        plan_memory(m, g, pl, weight_dtype, kv_dtype, context=isl)
        dmem = plan_memory(m, g, dl, weight_dtype, kv_dtype, context=isl + osl)
        xfer = kv_transfer(
            m, isl, kv_dtype=kv_dtype, gpu=g, path="nic", prefill_layout=pl, decode_layout=dl
        )
        est = estimate_disagg(
            CostModel(m, g, pl, engine, weight_dtype, kv_dtype),
            CostModel(m, g, dl, engine, weight_dtype, kv_dtype),
            isl,
            osl,
            concurrency,
            n_prefill=prefill_workers,
            n_decode=decode_workers,
            kv_transfer_s=xfer.time_s,
            decode_kv_capacity_tokens=dmem.kv_capacity_tokens,
            rounds=rounds,
        )
        out |= {
            "prefill_layout": str(pl),
            "decode_layout": str(dl),
            "prefill_workers": prefill_workers,
            "decode_workers": decode_workers,
            "gpus": pl.gpus * prefill_workers + dl.gpus * decode_workers,
            "kv_transfer_ms": xfer.time_s * 1e3,
            "memory": dmem.to_dict(),
        }
    out["estimate"] = est.to_dict()
    out["output_tokens_per_s_per_gpu"] = est.throughput_rps * osl / out["gpus"]

    def render(con) -> None:  # type: ignore[no-untyped-def]
        e = est.to_dict()
        rows = [
            ("model / gpu / engine", f"{m.name} / {g.name} / {engine}"),
            ("setup", f"{mode}, ISL {isl}, OSL {osl}, {concurrency} clients, {out['gpus']} GPUs"),
            ("TTFT", f"{e['ttft_ms']:.1f} ms"),
            ("TPOT", f"{e['tpot_ms']:.2f} ms"),
            (
                "throughput",
                f"{est.throughput_rps:.2f} req/s, "
                f"{out['output_tokens_per_s_per_gpu']:.0f} output tok/s/GPU",
            ),
            ("mean decode batch", f"{est.decode_batch:.1f}"),
            ("KV capacity", f"{out['memory']['kv_capacity_tokens']:,} tokens per instance"),
            ("KV-limited", str(est.kv_limited)),
        ]
        if mode == "disagg":
            rows.append(("KV transfer", f"{out['kv_transfer_ms']:.1f} ms per request"))
        con.print(kv_table("pdplan estimate (steady state, closed loop)", rows))

    emit(out, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("estimate")(estimate_cmd)
