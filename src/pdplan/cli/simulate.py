"""`pdplan simulate`: run the discrete-event cluster simulator on a trace or synthetic load."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from pdplan.errors import ConfigError, InputError
from pdplan.sim import SimConfig, build_instances, simulate

from ._common import console, context_warning, emit, kv_table
from ._simulate_setup import cost_model, pools_on, prefix_caches, switches
from ._simulate_setup import workload as workload_of

__all__ = ["register"]


def _run(model: str, gpu: str, deployment: str, workload: str, o: dict[str, Any]) -> None:
    """Build the cluster from the catalog and cost model, simulate, write and show."""
    pools = pools_on(deployment, gpu)
    make, links, kvb, eff, spec = cost_model(
        model, gpu, o["engine"], o["weight_dtype"], o["kv_dtype"]
    )
    kw: dict[str, Any] = {}
    if o["chunk"]:
        kw["chunk_budget"] = o["chunk"]  # else agg pools chunk at the engine's budget (x DP)
    if o["max_batch"]:
        kw["max_batch"] = o["max_batch"]  # else the engine's max sequences (x DP ranks)
    _check_outputs(o)
    trace = {k: o[k] for k in ("fmt", "mapping", "skip_bad", "rate", "clients")}
    wl, arrivals = workload_of(workload, o["duration"], trace)
    instances = build_instances(pools, make, links=links, chunked=eff.chunked, **kw)
    _check_roles(instances, o)
    lengths = wl.input_len.astype("int64") + wl.output_len
    over = int((lengths > spec.max_position_embeddings).sum()) if len(lengths) else 0
    if over and spec.max_position_embeddings:
        context_warning(spec, int(lengths.max()), "requests", over)
    cfg = SimConfig(
        instances=prefix_caches(instances, wl, o["prefix_cache"]),
        kv_bytes_per_token=kvb,
        kv_layers=spec.num_layers,
        routing=o["routing"],
        pairing=o["pairing"],
        transfer_mode=o["transfer"],
        preemption=o["preemption"],
        exact=o["exact"],
        ttft_slo_s=o["slo_ttft"],
        tpot_slo_s=o["slo_tpot"],
        trace=o["trace_out"] is not None,
        sample_interval_s=o["sample_interval"],
        switches=switches(o["switch"], instances),
        switch_cost_s=o["switch_cost"],
        ttft_overhead_s=eff.ttft_overhead_s,  # the engine's, as `accuracy --simulate` uses
        handoff_s=eff.pd_handoff_s,
    )
    from rich.progress import Progress

    with Progress(console=console, transient=True, disable=o["as_json"]) as bar:
        task = bar.add_task("simulating", total=len(wl))
        res = simulate(cfg, wl, arrivals, progress=lambda d, t: bar.update(task, completed=d))
    if res.n_requests == 0:
        raise ConfigError(f"no request arrived before --duration {o['duration']} s")
    _write(res, o)
    _show(res.summary(), deployment, o["as_json"])


def _check_roles(instances: tuple[Any, ...], o: dict[str, Any]) -> None:
    """Refuse options the deployment would silently ignore."""
    from pdplan.sim.config import PAIRINGS, TRANSFER_MODES

    for flag, value, known in (("transfer mode", o["transfer"], TRANSFER_MODES),
                               ("pairing", o["pairing"], PAIRINGS)):  # fmt: skip
        if value not in known:
            raise ConfigError(f"unknown {flag} {value!r}; known: {', '.join(known)}")
    if instances[0].role == "agg":
        moot = [
            f"--{k} {o[k]}"
            for k, default in (("transfer", "after"), ("pairing", "least_tokens"))
            if o[k] != default
        ]
        if o["switch"]:
            moot.append("--switch")
        if moot:
            raise ConfigError(
                f"{', '.join(moot)}: only a disaggregated deployment (xPyD, e.g. "
                "'1P:tp4+2D:tp4') has KV transfers, P->D pairing and prefill/decode roles"
            )
    if o["routing"] == "prefix" and o["prefix_cache"].strip().lower() == "off":
        raise ConfigError("--routing prefix routes by prefix-cache hits: add --prefix-cache auto")


def _check_outputs(o: dict[str, Any]) -> None:
    """Fail before simulating if an output file cannot be written or has the wrong kind."""
    for key, flag, kinds in (
        ("requests_out", "--requests-out", (".csv", ".parquet")),
        ("timeline_out", "--timeline-out", (".csv", ".parquet")),
        ("trace_out", "--chrome-trace", (".json",)),
    ):
        path = o[key]
        if not path:
            continue
        if not path.lower().endswith(kinds):
            raise ConfigError(f"{flag} {path}: name it {' or '.join('*' + k for k in kinds)}")
        parent = Path(path).resolve().parent
        if not parent.is_dir():
            raise InputError("cannot write: no such directory", path=str(parent))
        if (Path(path).exists() and not os.access(path, os.W_OK)) or not os.access(parent, os.W_OK):
            raise InputError("cannot write: permission denied", path=path)


def _show(s: dict[str, Any], deployment: str, as_json: bool) -> None:
    rows: list[tuple[str, Any]] = [
        (k, f"{s[k]:,}") for k in ("requests", "finished", "dropped", "preemptions")
    ]
    if s["unfinished"]:
        rows.insert(2, ("unfinished", f"{s['unfinished']:,} (still queued when the run ended)"))
    rows += [(k, f"{s[k]:.3f} req/s") for k in ("throughput_rps", "goodput_rps")]
    rows += [
        (
            f"{m[:-2].upper()} p50 / p90 / p99 / p99.9 (ms)",
            " / ".join(f"{s[m][q] * 1e3:.1f}" for q in ("p50", "p90", "p99", "p99.9")),
        )
        for m in ("ttft_s", "tpot_s", "itl_s", "e2e_s")
    ]
    if s["role_switches"]:
        done = ", ".join(
            f"#{w['instance']} -> {w['role']} at {w['t_s']:.1f} s" for w in s["role_switches"]
        )
        rows.append(("role switches", done))
    if s["prefix_hit_rate"] > 0:
        rows.append(("prefix-cache hit rate", f"{s['prefix_hit_rate']:.3f} of prompt tokens"))
    rows.append(("SLO attainment", f"{s['slo']['attainment']:.3f}"))
    emit(s, as_json, lambda c: c.print(kv_table(f"simulate {deployment}", rows)))


def _write(res: Any, o: dict[str, Any]) -> None:
    """Per-request rows, the instances' timeline (CSV, or Parquet by extension) and the
    Chrome trace, where asked for."""
    if o["requests_out"]:
        _write_table(res.request_table(), o["requests_out"])
    if o["timeline_out"]:
        _write_table(res.timeline_table(), o["timeline_out"])
    if o["trace_out"]:
        try:
            Path(o["trace_out"]).write_text(json.dumps(res.chrome_trace()))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=o["trace_out"]) from exc


def _write_table(table: dict[str, Any], path: str) -> None:
    """Columns -> Parquet (a .parquet name) or CSV with a header row."""
    try:
        if path.endswith(".parquet"):
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table(table), path)
        else:
            import numpy as np

            cols = list(table)
            data = np.column_stack([table[c] for c in cols]) if cols else np.zeros((0, 0))
            header = ",".join(cols)
            np.savetxt(path, data, delimiter=",", header=header, comments="", fmt="%.9g")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        model: str = typer.Option(..., "--model", help="model name from the catalog"),
        gpu: str = typer.Option(
            ..., "--gpu", help="GPU name from the catalog (a pool may name its own: '4P:tp4@h100')"
        ),
        deployment: str = typer.Option(
            ...,
            "--deployment",
            help="'tp4x2' (agg) or '4P:tp4+8D:tp8' (xPyD); '@GPU' puts a pool on another GPU "
            "('4P:tp4@h100+8D:tp8@h200', 'tp4x2@h100+tp8@b200')",
        ),
        workload: str = typer.Option(
            ..., "--workload", help="trace FILE or 'poisson:rate=10,n=5000,isl=..,osl=..'"
        ),
        duration: float = typer.Option(None, "--duration", help="only arrivals before this (s)"),
        routing: str = typer.Option(
            "least_tokens",
            "--routing",
            help="round_robin, least_tokens, p2c or prefix (cache affinity; with --prefix-cache)",
        ),
        exact: bool = typer.Option(False, "--exact", help="step every iteration (reference)"),
        slo_ttft: float = typer.Option(2.0, "--slo-ttft", help="TTFT SLO, s"),
        slo_tpot: float = typer.Option(0.1, "--slo-tpot", help="TPOT SLO, s"),
        chunk: int = typer.Option(
            None,
            "--chunk",
            min=1,
            help="agg chunked-prefill token budget (default: the engine's, x DP ranks)",
        ),
        engine: str = typer.Option("vllm", "--engine", help="vllm, sglang or trtllm"),
        weight_dtype: str = typer.Option(
            None, "--weight-dtype", help="bf16, fp8, fp4, int4 (default: the model's)"
        ),
        kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV cache dtype: bf16, fp8"),
        max_batch: int = typer.Option(
            None,
            "--max-batch",
            min=1,
            help="most running sequences per instance "
            "(default: the engine's max_num_seqs / max_running_requests / max_batch_size, x DP)",
        ),
        pairing: str = typer.Option("least_tokens", "--pairing", help="P -> D pairing policy"),
        transfer: str = typer.Option(
            "after", "--transfer", help="KV transfer: after (prefill done) or layerwise"
        ),
        preemption: str = typer.Option(
            "recompute", "--preemption", help="when KV runs out: recompute or swap"
        ),
        prefix_cache: str = typer.Option(
            "off",
            "--prefix-cache",
            help="LRU prefix cache per prefill / agg instance, for traces with block hashes: "
            "off, auto (the instance's KV pool) or a number of blocks",
        ),
        switch: list[str] = typer.Option(
            [],
            "--switch",
            help="TIME_S:INSTANCE:ROLE, repeatable: at TIME_S the instance (index or name, "
            "e.g. prefill1) drains and becomes prefill or decode",
        ),
        switch_cost: float = typer.Option(
            5.0, "--switch-cost", min=0.0, help="seconds an instance is out while switching"
        ),
        requests_out: str = typer.Option(None, "--requests-out", help="per-request CSV/Parquet"),
        timeline_out: str = typer.Option(
            None,
            "--timeline-out",
            help="per-instance queue / batch / KV samples over time, CSV or Parquet",
        ),
        sample_interval: float = typer.Option(
            1.0, "--sample-interval", help="timeline sampling period, s"
        ),
        trace_out: str = typer.Option(None, "--chrome-trace", help="Chrome trace JSON file"),
        rate: float = typer.Option(
            None, "--rate", help="trace FILE: Poisson arrivals at this rate (req/s), not its times"
        ),
        clients: int = typer.Option(
            None,
            "--clients",
            min=1,
            help="trace FILE: replay its requests with C closed-loop clients",
        ),
        fmt: str = typer.Option(
            None,
            "--format",
            help="trace FILE format (default: from its header); see `pdplan workload`",
        ),
        mapping: str = typer.Option(
            None, "--map", help="trace FILE columns: input=COL,output=COL[,time=COL,time_unit=ms]"
        ),
        skip_bad: bool = typer.Option(
            False, "--skip-bad", help="trace FILE: skip malformed rows (counted) instead of failing"
        ),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Simulate a deployment on a workload: tail TTFT / TPOT / ITL, SLO attainment, goodput."""
        positive = (("--slo-ttft", slo_ttft), ("--slo-tpot", slo_tpot))
        for flag, v in (*positive, ("--sample-interval", sample_interval)):
            if not v > 0:
                raise ConfigError(f"{flag}={v} must be a positive number of seconds")
        opts = {
            "duration": duration, "routing": routing, "exact": exact, "slo_ttft": slo_ttft,
            "slo_tpot": slo_tpot, "chunk": chunk, "requests_out": requests_out,
            "trace_out": trace_out, "as_json": as_json, "engine": engine,
            "weight_dtype": weight_dtype, "kv_dtype": kv_dtype, "max_batch": max_batch,
            "pairing": pairing, "transfer": transfer, "preemption": preemption,
            "prefix_cache": prefix_cache, "switch": switch, "switch_cost": switch_cost,
            "timeline_out": timeline_out, "sample_interval": sample_interval, "rate": rate,
            "clients": clients, "fmt": fmt, "mapping": mapping, "skip_bad": skip_bad,
        }  # fmt: skip
        _run(model, gpu, deployment, workload, opts)
