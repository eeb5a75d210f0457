"""`pdplan simulate`: run the discrete-event cluster simulator on a trace or synthetic load."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

from pdplan.errors import ConfigError, InputError
from pdplan.sim import Arrivals, SimConfig, build_instances, parse_deployment, simulate

from ._common import console, emit, kv_table

__all__ = ["register"]


def _cost_model(
    model: str, gpu: str, engine: str, weight_dtype: str | None = None, kv_dtype: str = "bf16"
) -> tuple[Any, Any, float, bool, Any]:
    """(make(role, layout, gpu) -> (StepModel, KV tokens), links(gpu) -> the GPU's link speeds
    and NVLink domain, KV bytes/token, whether the engine chunks prompts into mixed batches,
    the ModelSpec) from the catalog and the real cost model. `gpu` is the default; a pool may
    name its own ('4P:tp4@h100'). Every layout is checked on its GPU (e.g. TP must divide the
    attention heads) and must hold its weights (DoesNotFitError says by how much)."""
    from functools import cache

    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.efficiency import get_efficiency
    from pdplan.perf.memory import engine_kv_memory, plan_memory
    from pdplan.plan.steady import valid_layout

    m = get_model(model)
    hw = cache(lambda name: get_gpu(name or gpu))
    g = hw(None)
    eff = get_efficiency(engine, g.name, g.hbm_gib)  # the engine's defaults on this GPU

    def make(role: str, layout: Any, on: str | None = None) -> tuple[Any, int]:
        gpu_spec = hw(on)
        lay = valid_layout(m, gpu_spec, layout)
        frac, of_free = engine_kv_memory(engine)
        mem = plan_memory(
            m, gpu_spec, lay, weight_dtype, kv_dtype, mem_fraction=frac, of_free=of_free
        )
        cm = CostModel(m, gpu_spec, lay, engine, weight_dtype, kv_dtype)
        return cm, int(mem.kv_capacity_tokens)

    def links(on: str | None) -> dict[str, float]:
        s = hw(on)  # KV moves over NVLink inside one scale-up domain, else over the NICs
        return {
            "nic_bytes_per_s": s.nic_bytes_per_s,
            "nvlink_bytes_per_s": s.scaleup_bytes_per_s,
            "gpus_per_node": s.scaleup_domain,
        }

    return make, links, float(m.kv_bytes_per_token(kv_dtype)), eff.chunked, m


def _workload(spec: str, duration: float | None) -> tuple[Any, Arrivals]:
    """A trace FILE (timestamps replayed) or 'poisson:rate=10,n=5000,isl=...,osl=...'."""
    import pdplan.workload as wlmod

    m = re.fullmatch(r"(poisson|closed):(.*)", spec.strip())
    if m is None:
        if not Path(spec).exists():
            raise InputError(
                "no such workload file (or use poisson:rate=R,n=N,isl=..,osl=..)", path=spec
            )
        wl = wlmod.read_workload(spec)  # type: ignore[attr-defined]
        return wl, Arrivals("trace" if wl.has_times else "poisson", duration_s=duration)
    kw = dict(p.split("=", 1) for p in m.group(2).split(",") if "=" in p)
    try:
        n = int(kw.pop("n", "1000"))
        rate = float(kw.pop("rate", "0") or 0)
        conc = int(kw.pop("c", kw.pop("concurrency", "1")))
    except ValueError as exc:
        raise InputError(f"bad number in workload spec {spec!r}: {exc}") from exc
    lengths = {"input": kw.pop("isl", kw.pop("input", "1024")), "output": "256"}
    lengths["output"] = kw.pop("osl", kw.pop("output", "256"))
    if kw:
        raise InputError(f"unknown key(s) {', '.join(kw)} in workload spec {spec!r}")
    wl = wlmod.synthesize(n=n, rate=rate or 1.0, **lengths)  # type: ignore[attr-defined]
    if m.group(1) == "closed":
        if conc < 1:
            raise InputError(f"c (closed-loop clients) must be >= 1 in workload spec {spec!r}")
        return wl, Arrivals("closed", concurrency=conc)
    return wl, Arrivals("poisson", rate=rate, duration_s=duration)


def _run(model: str, gpu: str, deployment: str, workload: str, o: dict[str, Any]) -> None:
    """Build the cluster from the catalog and cost model, simulate, write and show."""
    from dataclasses import replace

    from pdplan.catalog.gpus import get_gpu

    default = get_gpu(gpu).name  # a pool '@' the default GPU is the same hardware
    pools = [
        replace(p, gpu=None) if p.gpu and get_gpu(p.gpu).name == default else p
        for p in parse_deployment(deployment)
    ]
    make, links, kvb, chunked, spec = _cost_model(
        model, gpu, o["engine"], o["weight_dtype"], o["kv_dtype"]
    )
    kw: dict[str, Any] = {}
    if o["chunk"]:
        kw["chunk_budget"] = o["chunk"]  # else agg pools chunk at the engine's budget (x DP)
    if o["max_batch"]:
        kw["max_batch"] = o["max_batch"]  # else the engine's max sequences (x DP ranks)
    wl, arrivals = _workload(workload, o["duration"])
    instances = build_instances(pools, make, links=links, chunked=chunked, **kw)
    cfg = SimConfig(
        instances=_prefix_caches(instances, wl, o["prefix_cache"]),
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
        switches=_switches(o["switch"], instances),
        switch_cost_s=o["switch_cost"],
    )
    from rich.progress import Progress

    with Progress(console=console, transient=True, disable=o["as_json"]) as bar:
        task = bar.add_task("simulating", total=len(wl))
        res = simulate(cfg, wl, arrivals, progress=lambda d, t: bar.update(task, completed=d))
    _write(res, o["requests_out"], o["trace_out"])
    _show(res.summary(), deployment, o["as_json"])


def _switches(specs: list[str], instances: tuple[Any, ...]) -> tuple[Any, ...]:
    """'T:WHO:ROLE' -> RoleSwitch: at T seconds, instance WHO (its index, or its name's first
    part as the summary prints it, e.g. 'prefill1') drains and becomes ROLE."""
    from pdplan.sim import RoleSwitch

    names = {i.name.split(":")[0]: k for k, i in enumerate(instances)}
    out = []
    for spec in specs:
        parts = spec.strip().lower().split(":")
        try:
            t, who, role = float(parts[0]), parts[1], parts[2]
            idx = int(who) if who.isdigit() else names[who]
            bad_role = role not in ("prefill", "decode")
            if len(parts) != 3 or not t >= 0 or not 0 <= idx < len(instances) or bad_role:
                raise ValueError
        except (ValueError, IndexError, KeyError):
            raise ConfigError(
                f"--switch {spec!r}: use TIME_S:INSTANCE:ROLE with ROLE prefill or decode, e.g. "
                f"600:prefill1:decode (instances: {', '.join(names)})"
            ) from None
        out.append(RoleSwitch(t, idx, role))
    return tuple(out)


def _prefix_caches(instances: tuple[Any, ...], wl: Any, setting: str) -> tuple[Any, ...]:
    """Give prefill and aggregated instances an LRU prefix cache: 'off', 'auto' (the whole KV
    pool, in the trace's blocks: vLLM / SGLang keep finished prompts' blocks in the KV cache
    until running requests need them, so this is an upper bound) or a number of blocks."""
    from dataclasses import replace

    setting = setting.strip().lower()
    if setting == "off":
        return instances
    if not wl.has_hashes:
        raise InputError(
            "--prefix-cache needs a trace with prefix block hashes (Mooncake 'hash_ids'); "
            "this workload has none"
        )
    if setting != "auto" and not (setting.isdigit() and int(setting) > 0):
        raise ConfigError(f"--prefix-cache={setting!r}: use off, auto or a number of blocks >= 1")
    return tuple(
        i
        if i.role == "decode"
        else replace(
            i,
            prefix_cache_blocks=int(setting)
            if setting != "auto"
            else max(1, i.kv_capacity_tokens // wl.block_tokens),
        )
        for i in instances
    )


def _show(s: dict[str, Any], deployment: str, as_json: bool) -> None:
    rows: list[tuple[str, Any]] = [
        (k, f"{s[k]:,}") for k in ("requests", "finished", "dropped", "preemptions")
    ]
    rows += [(k, f"{s[k]:.3f} req/s") for k in ("throughput_rps", "goodput_rps")]
    rows += [
        (
            f"{m[:-2].upper()} p50 / p90 / p99 (ms)",
            " / ".join(f"{s[m][q] * 1e3:.1f}" for q in ("p50", "p90", "p99")),
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


def _write(res: Any, requests_out: str | None, trace_out: str | None) -> None:
    if requests_out:
        table = res.request_table()
        try:
            if requests_out.endswith(".parquet"):
                import pyarrow as pa
                import pyarrow.parquet as pq

                pq.write_table(pa.table(table), requests_out)
            else:
                import numpy as np

                cols = list(table)
                np.savetxt(
                    requests_out,
                    np.column_stack([table[c] for c in cols]),
                    delimiter=",",
                    header=",".join(cols),
                    comments="",
                    fmt="%.9g",
                )
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=requests_out) from exc
    if trace_out:
        try:
            Path(trace_out).write_text(json.dumps(res.chrome_trace()))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", path=trace_out) from exc


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
        trace_out: str = typer.Option(None, "--chrome-trace", help="Chrome trace JSON file"),
        as_json: bool = typer.Option(False, "--json"),
    ) -> None:
        """Simulate a deployment on a workload: tail TTFT / TPOT / ITL, SLO attainment, goodput."""
        for flag, v in (("--slo-ttft", slo_ttft), ("--slo-tpot", slo_tpot)):
            if not v > 0:
                raise ConfigError(f"{flag}={v} must be a positive number of seconds")
        opts = {
            "duration": duration, "routing": routing, "exact": exact, "slo_ttft": slo_ttft,
            "slo_tpot": slo_tpot, "chunk": chunk, "requests_out": requests_out,
            "trace_out": trace_out, "as_json": as_json, "engine": engine,
            "weight_dtype": weight_dtype, "kv_dtype": kv_dtype, "max_batch": max_batch,
            "pairing": pairing, "transfer": transfer, "preemption": preemption,
            "prefix_cache": prefix_cache, "switch": switch, "switch_cost": switch_cost,
        }  # fmt: skip
        _run(model, gpu, deployment, workload, opts)
