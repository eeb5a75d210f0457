"""Predict a measured benchmark row by simulating its closed loop (pdplan accuracy --simulate)."""

from __future__ import annotations

import math

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import Efficiency, get_efficiency
from pdplan.perf.kv_transfer import KV_PATHS, engine_preallocates_decode_kv, kv_shards
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.memory import engine_reserves_output_kv, plan_memory
from pdplan.plan.accuracy import (
    Prediction,
    check_row_deployment,
    check_row_layouts,
    is_blackwell,
    is_inferencemax,
    kv_dtype_for,
)
from pdplan.plan.row_memory import row_kv_memory
from pdplan.plan.row_recipe import row_gate, row_recipe_eff
from pdplan.plan.row_spec import draft_layers, row_cost_model
from pdplan.sim import InstanceSpec, simulate_closed_loop

__all__ = [
    "CLIENTS",
    "MAX_SIM_REQUESTS",
    "is_inferencemax",
    "recv_interval",
    "simulate_measured_row",
]

# How the benchmark client drives the closed loop: name -> (range ratio R, requests per client).
#   fixed:  every request has exactly ISL / OSL (the row's numbers); the start-up round's weight
#           comes from the engine's fitted bench_rounds (rounds x C requests in all).
#   random: vLLM benchmark_serving.py's random dataset as InferenceMAX sweeps run it:
#           --random-range-ratio 0.8 (lengths uniform in [0.8 L, L]) and --num-prompts 10 x C
#           (InferenceMAX benchmarks/*.sh, .github/workflows/full-sweep-tmpl.yml).
CLIENTS: dict[str, tuple[float, float | None]] = {"fixed": (1.0, None), "random": (0.8, 10.0)}

# InferenceMAX's SGLang recipes on B200 / B300 set --scheduler-recv-interval: the scheduler then
# takes in new requests only every R decode steps. Most write 10, and 30 from 16 clients up
# (InferenceX benchmarks/single_node/dsr1_fp{4,8}_b{2,3}00.sh, qwen3.5_{bf16,fp8}_b200.sh,
# qwen3.5_{bf16,fp4}_b300.sh: "if CONC >= 16, relax to ~30"); the exceptions, per recipe
# (checkpoint dtype, GPU) -> R at every C:
#   GLM-5 FP8 on B200 / B300 (glm5_fp8_b{2,3}00.sh): no flag, SGLang's default 1;
#   GLM-5 FP4 on B200 (glm5_fp4_b200.sh): 10;  Qwen3.5 FP4 on B200 (qwen3.5_fp4_b200.sh): 30;
#   Qwen3.5 FP8 on B300 (qwen3.5_fp8_b300.sh): 10;  DeepSeek-R1 FP8 at TP4 (dsr1_fp8_b{2,3}00.sh,
#   whose TP4 branch runs 8k prompts only): 10.
# Its H200 and most AMD recipes pass no interval (SGLang's default, 1). Under the fixed client
# (lock-stepped rounds reach an idle engine, which polls at once) the interval changes nothing;
# under the random client (`--client random|auto`) desynchronised arrivals wait for the poll.
_RECV_INTERVAL: dict[tuple[str, str, str], int] = {
    ("glm-5", "fp8", "b200"): 1,
    ("glm-5", "fp8", "b300"): 1,
    ("glm-5", "fp4", "b200"): 10,
    ("qwen3.5", "fp4", "b200"): 30,
    ("qwen3.5", "fp8", "b300"): 10,
}


def recv_interval(row: MeasuredRow) -> int:
    """Decode steps between the scheduler's polls for new requests in the row's launch."""
    if not (row.backend == "sglang" and is_inferencemax(row) and is_blackwell(row)):
        return 1
    name, dtype = row.model_path.lower(), (row.weight_dtype or "").lower()
    family = next((f for f in ("glm-5", "qwen3.5", "deepseek") if f in name), "")
    key = (family, "fp8" if dtype.startswith("fp8") else dtype, row.system.lower()[:4])
    if key in _RECV_INTERVAL:
        return _RECV_INTERVAL[key]
    if key[:2] == ("deepseek", "fp8") and row.layout is not None and row.layout.tp == 4:
        return 10
    return 30 if (row.concurrency or 0) >= 16 else 10


# Cap on simulated requests per row: rows with thousands of clients would otherwise simulate
# rounds x C requests; beyond this the start-up round dominates anyway.
MAX_SIM_REQUESTS = 20_000


def _instance(
    row: MeasuredRow, role: str, layout_kind: str, eff: Efficiency | None = None
) -> tuple[InstanceSpec, CostModel]:
    model, gpu = get_model(row.model_path), get_gpu(row.system)
    lay = (
        row.layout
        if layout_kind == "agg"
        else (row.prefill_layout if layout_kind == "prefill" else row.decode_layout)
    )
    if lay is None:  # refused by check_row_deployment first
        raise ConfigError(f"row has no {layout_kind} layout")
    check_row_layouts(row, model, gpu)
    kvd = kv_dtype_for(row)
    eff = row_recipe_eff(row, eff or get_efficiency(row.backend, gpu.name, gpu.hbm_gib))
    cm = row_cost_model(row, model, gpu, lay, eff)
    frac, of_free = row_kv_memory(row, gpu, lay, cm)
    mem = plan_memory(
        model,
        gpu,
        lay,
        row.weight_dtype,
        kvd,
        moe_dtype=row.moe_dtype,
        context=row.isl + row.osl,
        mem_fraction=frac,
        of_free=of_free,
        draft_layers=draft_layers(cm),
    )
    eff = cm.eff
    chunk = cm.step_token_budget if (eff.chunked and role == "agg") else None
    spec = InstanceSpec(
        role=role,
        step_model=cm,
        max_batch=max(1, row.concurrency or 1),
        kv_capacity_tokens=mem.pool_tokens,  # the state is charged per sequence instead
        kv_state_tokens=mem.state_tokens_per_seq,
        chunk_budget=chunk,
        prefill_token_budget=cm.step_token_budget,
        gpus=lay.gpus,
        recv_interval=recv_interval(row) if role == "agg" else 1,
        ctx_gate=row_gate(row) if role == "agg" else None,
        kv_reserve_output=role == "agg" and engine_reserves_output_kv(row.backend),
        # as `pdplan kv` times a transfer: line rate x KV_PATHS' efficiency, and only the GPUs
        # that hold a distinct shard of one request's KV send it
        nic_bytes_per_s=gpu.nic_bytes_per_s * KV_PATHS["nic"]["efficiency"],
        nvlink_bytes_per_s=gpu.scaleup_bytes_per_s * KV_PATHS["nvlink"]["efficiency"],
        kv_senders=kv_shards(model, lay),
        name=f"{role}-{lay}",
    )
    return spec, cm


def _resolve_client(row: MeasuredRow, client: str) -> str:
    """The CLIENTS key to drive `row` with ('auto': random for InferenceMAX rows, else fixed)."""
    if client == "auto":
        client = "random" if is_inferencemax(row) else "fixed"
    if client not in CLIENTS:
        raise ConfigError(f"unknown benchmark client {client!r}; known: auto, {', '.join(CLIENTS)}")
    return client


def _instances(row: MeasuredRow, eff: Efficiency | None) -> tuple[list[InstanceSpec], CostModel]:
    """The row's deployment: one aggregated instance, or its prefill and decode workers."""
    if row.mode == "agg":
        spec, cm = _instance(row, "agg", "agg", eff)
        return [spec], cm
    p, cm = _instance(row, "prefill", "prefill", eff)
    d, _ = _instance(row, "decode", "decode", eff)
    return [p] * row.prefill_workers + [d] * row.decode_workers, cm


def simulate_measured_row(
    row: MeasuredRow, eff: Efficiency | None = None, client: str = "fixed"
) -> Prediction:
    """Simulate `row`'s benchmark: C closed-loop clients driven as `client` (CLIENTS) with the
    start-up round included (as the benchmark's mean includes it), the engine's per-request
    frontend overhead on TTFT and, disaggregated, its PD hand-off (perf/data/efficiency.yaml)."""
    conc = check_row_deployment(row)
    range_ratio, per_client = CLIENTS[_resolve_client(row, client)]
    instances, cm = _instances(row, eff)
    model = get_model(row.model_path)
    grow, windows, state = model.kv_bytes_parts(kv_dtype_for(row))
    rounds = max(1.0, per_client or cm.eff.bench_rounds)
    n = min(MAX_SIM_REQUESTS, max(conc + 1, math.ceil(rounds * conc)))
    out = simulate_closed_loop(
        instances,
        row.isl,
        row.osl,
        conc,
        n_requests=n,
        warmup=0,
        range_ratio=range_ratio,
        frontend_s=cm.eff.frontend_s,
        frontend_token_s=cm.eff.frontend_token_s,
        kv_bytes_per_token=grow,  # B/token, window B/token, B/sequence: ModelSpec.kv_bytes_parts
        kv_windows=windows,
        kv_state_bytes=state,
        kv_layers=model.num_layers,
        link_latency_s=KV_PATHS["nic"]["latency_s"],  # as `pdplan kv` (assumed 20 us)
        ttft_overhead_s=cm.eff.ttft_overhead_s,
        ttft_decode_steps=cm.eff.ttft_decode_steps,
        handoff_s=cm.eff.pd_handoff_s,
        decode_prealloc=row.mode != "agg" and engine_preallocates_decode_kv(row.backend),
    )
    ttft = out["ttft_s"]["mean"]
    tpot = out["tpot_s"]["mean"] if row.osl > 1 else math.nan  # one token: no inter-token time
    if not (math.isfinite(ttft) and (row.osl == 1 or math.isfinite(tpot))):
        raise ConfigError(_no_request_reason(instances, row))
    kv = sum(s.kv_capacity_tokens for s in instances if s.role != "prefill")
    return Prediction(row, ttft * 1e3, tpot * 1e3, kv_tokens=kv)


def _no_request_reason(instances: list[InstanceSpec], row: MeasuredRow) -> str:
    """Why a simulated row finished no request: an instance's KV room against one request's."""
    need = row.isl + row.osl
    # KV room of one sequence: the pool less its recurrent state (hybrid models)
    cap = min(s.kv_capacity_tokens - (s.kv_state_tokens or 0) for s in instances)
    if cap < need:
        return (
            f"one request needs KV for {need:,} tokens (ISL + OSL) but an instance holds "
            f"{cap:,}: short by {need - cap:,} tokens"
        )
    return "simulation finished no request"
