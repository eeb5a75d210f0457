"""`pdplan simulate`: run the discrete-event cluster simulator on a trace or synthetic load."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any, cast

import typer

from pdplan.errors import ConfigError
from pdplan.perf.spec_decode import parse_spec
from pdplan.sim import SimConfig, SimResult, simulate

from ._common import (
    MEM_FRACTION_HELP,
    context_warning,
    err_console,
    kv_dtype_arg,
    refuse_empty,
    warn,
)
from ._simulate_checks import (
    check_options,
    check_outputs,
    check_roles,
    check_seed,
    locality_note,
    prealloc_of,
    preemption_note,
    unreached_switches,
)
from ._simulate_report import overload_warning, show, write
from ._simulate_setup import (
    DEFAULT_SAMPLE_S,
    ctx_gates,
    finer_sampling,
    prefix_caches,
    switches,
)
from ._simulate_workload import draws_at_random, note_duration_cut
from ._simulate_workload import workload as workload_of

__all__ = ["register"]

# --switch-cost default, s: SimConfig's (weights stay resident, the role's scheduler and KV
# endpoints restart; sim/config.py gives the source)
SWITCH_COST_S = cast(float, SimConfig.__dataclass_fields__["switch_cost_s"].default)


def _run(model: str, gpu: str, deployment: str, workload: str, o: dict[str, Any]) -> None:
    """Build the cluster from the catalog and cost model, simulate, write and show."""
    from pdplan.plan.sim_deploy import build_cluster

    cluster = build_cluster(
        model, gpu, deployment, o["engine"], weight_dtype=o["weight_dtype"],
        kv_dtype=o["kv_dtype"], chunk=o["chunk"], max_batch=o["max_batch"],
        placement=o["placement"], spec_decode=o["spec_decode"], mem_fraction=o["mem_fraction"],
    )  # fmt: skip
    for text in cluster.warnings:
        warn(text)
    check_outputs(o, workload, model)
    preemption_note(o["engine"], o["preemption"])
    trace = {k: o[k] for k in ("fmt", "mapping", "skip_bad", "rate", "clients")}
    wl, arrivals = workload_of(workload, o["duration"], trace, o["seed"] or 0)
    check_seed(o, draws_at_random(workload, arrivals), cluster.instances)
    check_roles(cluster.instances, o)
    locality_note(cluster.instances, o)
    cfg = _config(cluster, wl, o)
    res = _simulate(cfg, wl, arrivals, o["as_json"])
    finer = finer_sampling(res.duration_s, o["sample_interval"])
    if finer is not None:  # a short run: again, sampled finely (the same run: deterministic)
        res = _simulate(replace(cfg, sample_interval_s=finer), wl, arrivals, o["as_json"])
    if res.n_requests == 0:
        raise ConfigError(f"no request arrived before --duration {o['duration']} s")
    note_duration_cut(arrivals, res.n_requests, len(wl))
    unreached_switches(o["switch"], cfg.switches, res.columns)
    _context(cluster.model, wl, res.n_requests)
    s = res.summary()
    spec = parse_spec(o["spec_decode"] or "")
    if spec is not None:  # said in the output, as the other deployment settings are
        s["spec_decode"] = spec.to_dict()
    gates = {i.name: asdict(i.ctx_gate) for i in cfg.instances if i.ctx_gate is not None}
    if gates:  # --adp-balance / --batch-wait, per instance they apply to
        s["ctx_gates"] = gates
    if arrivals.mode != "closed":  # a closed loop cannot outrun the cluster: it waits for it
        overload_warning(s, res, list(cluster.pools), gpu)
    write(res, o)
    show(s, res, deployment, o["as_json"])


def _config(cluster: Any, wl: Any, o: dict[str, Any]) -> SimConfig:
    gated = ctx_gates(cluster.instances, o["engine"], o["adp_balance"], o["batch_wait"])
    return cluster.config(  # type: ignore[no-any-return]
        instances=prefix_caches(gated, wl, o["prefix_cache"]),
        routing=o["routing"],
        pairing=o["pairing"],
        transfer_mode=o["transfer"],
        preemption=o["preemption"],
        exact=o["exact"],
        seed=o["seed"] or 0,
        ttft_slo_s=o["slo_ttft"],
        tpot_slo_s=o["slo_tpot"],
        trace=o["trace_out"] is not None,
        sample_interval_s=o["sample_interval"] or DEFAULT_SAMPLE_S,
        switches=switches(o["switch"], cluster.instances),
        switch_cost_s=SWITCH_COST_S if o["switch_cost"] is None else o["switch_cost"],
        decode_prealloc=prealloc_of(cluster.prealloc, o),
    )


def _simulate(cfg: SimConfig, wl: Any, arrivals: Any, quiet: bool) -> SimResult:
    """Run with a progress bar on stderr, erased when done; none with --json or when stderr
    is not a terminal (on stdout, a piped run's table began with the bar's stray blank
    line, and `> out.txt` hid the bar from the terminal)."""
    from rich.progress import Progress

    off = quiet or not err_console.is_terminal
    with Progress(console=err_console, transient=True, disable=off) as bar:
        task = bar.add_task("simulating", total=len(wl))
        return simulate(cfg, wl, arrivals, progress=lambda d, t: bar.update(task, completed=d))


def _context(spec: Any, wl: Any, n: int) -> None:
    """Flag the simulated requests (the first n: --duration may have cut the rest) whose
    prompt + output run past the model's context window."""
    if not spec.max_position_embeddings or n == 0:
        return
    lengths = wl.input_len[:n].astype("int64") + wl.output_len[:n]
    over = int((lengths > spec.max_position_embeddings).sum())
    if over:
        context_warning(spec, int(lengths.max()), "requests" if over > 1 else "a request", over)


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_cmd(
        model: str = typer.Option(
            ...,
            "--model",
            help="a catalog model (see `pdplan models`), its Hugging Face id (e.g. "
            "Qwen/Qwen3-32B, Qwen/Qwen3-32B-FP8) or the path of a config.json",
        ),
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
            ...,
            "--workload",
            help="a trace FILE (replays its timestamps, or see --rate / --clients) or a "
            "synthetic spec: poisson:rate=R,n=N (open loop, R req/s) or closed:c=C,n=N "
            "(C closed-loop clients; add think=S for S s between a client's requests), "
            "each with isl=.. and osl=..: N, uniform:LO:HI or lognormal:MEAN:SIGMA "
            "(a missing n / isl / osl is 1000 / 1024 / 256, with a note)",
        ),
        duration: float = typer.Option(None, "--duration", help="only arrivals before this (s)"),
        routing: str = typer.Option(
            "least_tokens",
            "--routing",
            help="round_robin, least_tokens (fewest prompt (+ output, agg) tokens in flight), "
            "kv_usage (the least of its KV pool in flight: larger pools take more), "
            "p2c or prefix (cache affinity; with --prefix-cache)",
        ),
        exact: bool = typer.Option(False, "--exact", help="step every iteration (reference)"),
        seed: int = typer.Option(
            None,
            "--seed",
            min=0,
            help="seed of the synthetic arrivals and lengths, p2c routing (runs "
            "are deterministic per seed; default 0)",
        ),
        slo_ttft: float = typer.Option(2.0, "--slo-ttft", help="TTFT SLO, s"),
        slo_tpot: float = typer.Option(0.1, "--slo-tpot", help="TPOT SLO, s"),
        chunk: int = typer.Option(
            None,
            "--chunk",
            min=1,
            help="chunked prefill, tokens per step: on an aggregated instance of a chunking "
            "engine (vllm, trtllm) the budget of a mixed step, decodes included (default: the "
            "engine's, x DP ranks); on a prefill instance the most prompt tokens of a step, "
            "long prompts split into chunks (default: the engine's token budget); with "
            "sglang (prefill-first) the most prompt tokens of a prefill step, decodes not "
            "mixed in (--chunked-prefill-size); decode instances ignore it",
        ),
        engine: str = typer.Option("vllm", "--engine", help="vllm, sglang or trtllm"),
        weight_dtype: str = typer.Option(
            None,
            "--weight-dtype",
            help="bf16, fp8, fp4 (NVFP4), mxfp4, int4, w4a8 (default: the model's)",
        ),
        kv_dtype: str = typer.Option(
            None,
            "--kv-dtype",
            callback=kv_dtype_arg,
            help="KV cache dtype: bf16, fp8 (fp8_e4m3 / fp8_e5m2), ... (default or auto: the "
            "checkpoint's)",
        ),
        spec_decode: str = typer.Option(
            None,
            "--spec-decode",
            help="speculative decoding METHOD:K[:ACCEPTANCE]: mtp or eagle, K draft tokens a "
            "step, each accepted with probability ACCEPTANCE (default 0.7: DeepSeek-R1 MTP's "
            "2.5 tokens a step at K=3); TPOT / ITL are per accepted token",
        ),
        adp_balance: str = typer.Option(
            None,
            "--adp-balance",
            help="TensorRT-LLM attention-DP balancing TIMEOUT[:WAIT] iterations "
            "(attention_dp_config enable_balance, timeout_iters, batching_wait_iters; WAIT "
            "default 10): new prompts wait until every DP rank holds one",
        ),
        batch_wait: str = typer.Option(
            None,
            "--batch-wait",
            help="TensorRT-LLM batch waiting ITERS:RATIO (batch_wait_timeout_iters, "
            "batch_wait_max_tokens_ratio): without attention DP, new prompts wait for RATIO x "
            "max_num_tokens or ITERS iterations",
        ),
        max_batch: int = typer.Option(
            None,
            "--max-batch",
            min=1,
            help="most running sequences per instance "
            "(default: the engine's max_num_seqs / max_running_requests / max_batch_size, x DP)",
        ),
        mem_fraction: float = typer.Option(
            None, "--mem-fraction", min=0.05, max=1.0, help=MEM_FRACTION_HELP
        ),
        pairing: str = typer.Option(
            "least_tokens",
            "--pairing",
            help="P -> D pairing: round_robin, least_tokens (the least KV to hold: prompt + "
            "output tokens of its requests), kv_usage (the least share of its KV pool), "
            "p2c (power of two choices) or "
            "local (the least-loaded decode instance on the prefill's node, KV over NVLink; "
            "else least_tokens)",
        ),
        placement: str = typer.Option(
            "packed",
            "--placement",
            help="instances on nodes: packed (pool after pool) or mixed (prefill and decode "
            "instances interleaved on the nodes, for --pairing local)",
        ),
        transfer: str = typer.Option(
            "after",
            "--transfer",
            help="KV transfer: after (once the prefill is done) or layerwise (overlapped with "
            "it from the prompt's first chunk; only the last layer trails)",
        ),
        preemption: str = typer.Option(
            "recompute", "--preemption", help="when KV runs out: recompute or swap"
        ),
        prealloc: bool = typer.Option(
            None,
            "--prealloc/--no-prealloc",
            help="xPyD: the decode instance reserves a prompt's KV before its prefill may "
            "start (SGLang's PD bootstrap) instead of admitting it after the prefill (vLLM "
            "connectors, TensorRT-LLM); default: the engine's (on for sglang)",
            show_default=False,
        ),
        prefix_cache: str = typer.Option(
            "off",
            "--prefix-cache",
            help="LRU prefix cache per prefill / agg instance (a decode instance's serves when "
            "a switch makes it prefill; a switch empties it), for traces with block hashes: "
            "off, auto (the instance's KV pool) or a number of blocks",
        ),
        switch: list[str] = typer.Option(
            [],
            "--switch",
            help="TIME_S:INSTANCE:ROLE, repeatable: at TIME_S the instance (index or name, "
            "e.g. prefill1) drains and becomes prefill or decode",
        ),
        switch_cost: float = typer.Option(
            None,
            "--switch-cost",
            min=0.0,
            help=f"seconds an instance is out while switching (default {SWITCH_COST_S:g})",
        ),
        requests_out: str = typer.Option(None, "--requests-out", help="per-request CSV/Parquet"),
        timeline_out: str = typer.Option(
            None,
            "--timeline-out",
            help="per-instance queue / batch / KV samples over time, CSV or Parquet",
        ),
        sample_interval: float = typer.Option(
            None,
            "--sample-interval",
            help="period of the instances' timeline samples (--timeline-out, the KV used mean / "
            "peak), s (default 1; a run under 20 s is run again at 1/107 of its length)",
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
            None,
            "--map",
            help="trace FILE columns: input=COL,output=COL[,time=COL,time_unit=ms] (time_unit: s, "
            "the default, or ms / us / ns)",
        ),
        skip_bad: bool = typer.Option(
            False,
            "--skip-bad",
            help="trace FILE: skip malformed rows (a note counts them) instead of failing",
        ),
        as_json: bool = typer.Option(
            False,
            "--json",
            help="print the summary as JSON (percentiles in s, per-instance load; warnings "
            "stay on stderr)",
        ),
    ) -> None:
        """Simulate a deployment on a workload: tail TTFT / TPOT / ITL, SLO attainment, goodput."""
        opts = {
            "duration": duration, "routing": routing, "exact": exact, "slo_ttft": slo_ttft,
            "slo_tpot": slo_tpot, "chunk": chunk, "requests_out": requests_out,
            "trace_out": trace_out, "as_json": as_json, "engine": engine,
            "weight_dtype": weight_dtype, "kv_dtype": kv_dtype, "max_batch": max_batch,
            "pairing": pairing, "transfer": transfer, "preemption": preemption,
            "prealloc": prealloc, "prefix_cache": prefix_cache, "switch": switch,
            "switch_cost": switch_cost,
            "timeline_out": timeline_out, "sample_interval": sample_interval, "rate": rate,
            "clients": clients, "fmt": fmt, "mapping": mapping, "skip_bad": skip_bad,
            "seed": seed, "placement": placement, "spec_decode": spec_decode,
            "adp_balance": adp_balance, "batch_wait": batch_wait, "mem_fraction": mem_fraction,
        }  # fmt: skip
        refuse_empty(
            {"--weight-dtype": weight_dtype, "--kv-dtype": kv_dtype, "--spec-decode": spec_decode,
             "--workload": workload, "--requests-out": requests_out,
             "--timeline-out": timeline_out, "--chrome-trace": trace_out}
        )  # fmt: skip
        check_options(opts)
        _run(model, gpu, deployment, workload, opts)
