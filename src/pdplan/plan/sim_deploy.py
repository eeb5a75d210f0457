"""A deployment from catalog names as simulator instances: the recipe `pdplan simulate` runs."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cache, partial
from typing import Any

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.model_spec import ModelSpec
from pdplan.catalog.models import get_model, guessed_shape
from pdplan.errors import ConfigError
from pdplan.parallel import require_valid
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import Efficiency, canonical_engine, get_efficiency, vendor_caveat
from pdplan.perf.kv_pool import growing_pool
from pdplan.perf.kv_transfer import KV_PATHS, engine_preallocates_decode_kv, kv_shards
from pdplan.perf.memory import engine_kv_memory, engine_reserves_output_kv, plan_memory
from pdplan.perf.spec_decode import SpecCostModel, SpecDecode, parse_spec
from pdplan.sim import Arrivals, InstanceSpec, Pool, SimConfig, SimResult, build_instances
from pdplan.sim import simulate as run_sim
from pdplan.sim.deploy import parse_deployment
from pdplan.workload.core import Workload

__all__ = ["Cluster", "build_cluster", "simulate_deployment"]


@dataclass(frozen=True)
class Cluster:
    """A deployment built from names: its instances (real cost models, the engine's token
    budgets, batch limits and KV pools), the model, the engine's Efficiency on the default
    GPU, layout warnings (TP or a stage crossing nodes), and `config(**kw)` for the SimConfig
    with the model's KV shape, `pdplan kv`'s link latency and the engine's TTFT overheads.
    prealloc: a disaggregated deployment whose engine reserves decode KV before each
    prefill (SGLang: SimConfig.decode_prealloc); config() turns it off with role switches."""

    instances: tuple[InstanceSpec, ...]
    pools: tuple[Pool, ...]
    model: ModelSpec
    eff: Efficiency
    kv_dtype: str
    warnings: tuple[str, ...] = field(default=())
    prealloc: bool = False

    def config(self, **kw: Any) -> SimConfig:
        """SimConfig of this cluster; kw (routing, preemption, seed, switches, SLOs, ...)
        override the defaults, `instances` too (e.g. with prefix caches added)."""
        grow, windows, state = self.model.kv_bytes_parts(self.kv_dtype)
        base: dict[str, Any] = {
            "instances": self.instances,
            "kv_bytes_per_token": grow,
            "kv_windows": windows,
            "kv_state_bytes": state,
            "kv_layers": self.model.num_layers,
            "link_latency_s": KV_PATHS["nic"]["latency_s"],  # as `pdplan kv` (assumed 20 us)
            "nvlink_latency_s": KV_PATHS["nvlink"]["latency_s"],  # likewise (assumed 10 us)
            "ttft_overhead_s": self.eff.ttft_overhead_s,  # as `accuracy --simulate` validates
            "ttft_decode_steps": self.eff.ttft_decode_steps,
            "handoff_s": self.eff.pd_handoff_s,
            # not modelled across role switches (SimConfig refuses the pair)
            "decode_prealloc": self.prealloc and not (kw.get("switches") or kw.get("policy")),
        }
        unknown = sorted(set(kw) - {f.name for f in fields(SimConfig)})
        if unknown:
            raise ConfigError(f"unknown SimConfig option(s) {', '.join(unknown)}")
        return SimConfig(**{**base, **kw})


def build_cluster(
    model: str,
    gpu: str,
    deployment: str,
    engine: str = "vllm",
    *,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    chunk: int | None = None,
    max_batch: int | None = None,
    placement: str = "packed",
    spec_decode: str | None = None,
    mem_fraction: float | None = None,
) -> Cluster:
    """Instances of `deployment` ('tp4x2', '4P:tp4+8D:tp8', '@GPU' per pool) of `model` on
    `gpu` served by `engine`. Every layout is checked on its GPU (TP must divide the heads,
    ...) and must hold its weights (DoesNotFitError says by how much). chunk: a chunking
    engine's mixed-step budget (vLLM, TensorRT-LLM), a prefill-first engine's prefill-step
    cap (SGLang); max_batch: most running sequences per instance; else the engine's;
    placement: "packed" (pool after pool on the nodes) or "mixed" (P and D share nodes, so a
    local pairing moves KV over NVLink; sim.placement); spec_decode: 'METHOD:K[:ACCEPTANCE]'
    (perf.spec_decode.parse_spec), every instance decodes speculatively; kv_dtype None: the
    checkpoint's KV directive, else BF16 (ModelSpec.serving_kv_dtype); mem_fraction: the
    engine's KV sizing fraction (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static:
    of the device; TensorRT-LLM kv_cache_free_gpu_memory_fraction: of what weights leave),
    else the engine's default (perf.memory.engine_kv_memory)."""
    m = get_model(model)
    kv_dtype = kv_dtype or m.serving_kv_dtype
    spec = parse_spec(spec_decode or "")
    default = get_gpu(gpu)
    hw = cache(lambda name: get_gpu(name) if name else default)
    eff = get_efficiency(engine, default.name, default.hbm_gib)  # the engine's, on this GPU
    warned: dict[str, None] = {w: None for w in [guessed_shape(m)] if w}
    pools = tuple(  # a pool on the default GPU by name runs on the same nodes as unnamed ones
        replace(p, gpu=None) if p.gpu and get_gpu(p.gpu).name == default.name else p
        for p in parse_deployment(deployment)
    )
    if all(p.gpu for p in pools):  # said, not silently ignored
        warned[
            f"--gpu {gpu} is not used: every pool names its own GPU "
            f"({', '.join(sorted({str(p.gpu) for p in pools}))})"
        ] = None
    _check_vllm_budget(engine, chunk, max_batch or eff.max_seqs)
    make = partial(_make, m, hw, engine, weight_dtype, kv_dtype, warned, spec, mem_fraction)
    kw: dict[str, Any] = {}
    if chunk and eff.chunked:
        kw["chunk_budget"] = chunk  # else agg pools chunk at the engine's budget (x DP)
    elif chunk:  # a prefill-first engine (SGLang): its prefill steps' token cap
        kw["prefill_token_budget"] = chunk
    if max_batch:
        kw["max_batch"] = max_batch  # else the engine's max sequences (x DP ranks)
    if engine_reserves_output_kv(engine):
        kw["kv_reserve_output"] = True  # aggregated pools (build_instances drops it elsewhere)
    instances = build_instances(
        list(pools),
        make,
        links=lambda on: _links(hw(on)),
        kv_senders=partial(kv_shards, m),  # GPUs that carry one request's KV, as `pdplan kv`
        chunked=eff.chunked,
        placement=placement,
        **kw,
    )
    prealloc = engine_preallocates_decode_kv(engine) and instances[0].role != "agg"
    return Cluster(instances, pools, m, eff, kv_dtype, tuple(warned), prealloc)


def _check_vllm_budget(engine: str, chunk: int | None, max_seqs: int) -> None:
    """vLLM refuses to start with a token budget under its running-sequence cap (SchedulerConfig
    _verify_args: "max_num_batched_tokens (...) must be greater than or equal to max_num_seqs
    (...)": each running sequence needs one token a step), so such a launch is refused here too
    rather than simulated with decodes that fill every step's budget and starve new prompts.
    max_seqs: --max-batch, else the engine's per-rank default (vLLM's 256 / 1024)."""
    if chunk and canonical_engine(engine) == "vllm" and chunk < max_seqs:
        raise ConfigError(
            f"--chunk {chunk} is under the {max_seqs} running sequences vLLM allows (--max-batch "
            "or its max_num_seqs default); vLLM refuses max_num_batched_tokens < max_num_seqs: "
            f"raise --chunk to >= {max_seqs} or set --max-batch <= {chunk}"
        )


def simulate_deployment(
    model: str,
    gpu: str,
    deployment: str,
    workload: Workload,
    arrivals: Arrivals | None = None,
    *,
    engine: str = "vllm",
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    placement: str = "packed",
    spec_decode: str | None = None,
    **config: Any,
) -> SimResult:
    """Simulate `workload` on `deployment` of `model` on `gpu` with `engine`, as `pdplan
    simulate` does; `config` goes to SimConfig (routing, preemption, seed, SLOs, ...)."""
    cluster = build_cluster(
        model, gpu, deployment, engine, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
        placement=placement, spec_decode=spec_decode,
    )  # fmt: skip
    return run_sim(cluster.config(**config), workload, arrivals)


def _make(
    m: ModelSpec,
    hw: Any,
    engine: str,
    weight_dtype: str | None,
    kv_dtype: str,
    warned: dict[str, None],
    spec: SpecDecode | None,
    mem_fraction: float | None,
    role: str,
    layout: Layout,
    on: str | None = None,
) -> tuple[CostModel, int, int, tuple[tuple[int, float], ...]]:
    """(cost model, KV capacity tokens, a sequence's fixed KV-pool tokens (its recurrent
    state), its window layers' charge: perf.kv_pool.growing_pool) of one pool's layout on its
    GPU; the layout's warnings gathered once each. (accuracy --simulate sizes its pool at the
    row's ISL + OSL instead: one length, so a sequence's window share is known.)"""
    g = hw(on)
    chk = require_valid(m, layout, scaleup_domain=g.scaleup_domain, gpus_per_node=g.gpus_per_node)
    for text in chk.warnings:
        warned[f"layout {layout} on {g.name}: {text}"] = None
    caveat = vendor_caveat(g.name, g.vendor, g.fp16_only)
    if caveat:
        warned[caveat] = None
    drafts = 0 if spec is None else spec.draft_layers  # the head's weights and KV layer
    args = (m, g, layout, engine, weight_dtype, kv_dtype)
    cm = CostModel(*args) if spec is None else SpecCostModel(*args, spec=spec)
    frac, of_free = engine_kv_memory(engine, g, layout, chunk_tokens=cm.eff.prefill_chunk,
                                     speculative=spec is not None)  # fmt: skip
    frac = frac if mem_fraction is None else mem_fraction
    mem = plan_memory(m, g, layout, weight_dtype, kv_dtype, mem_fraction=frac, of_free=of_free,
                      draft_layers=drafts)  # fmt: skip
    pool, fixed, wins = growing_pool(
        m, layout, kv_dtype, int(mem.pool_tokens), mem.state_tokens_per_seq
    )
    return cm, pool, fixed, wins


def _links(g: Any) -> dict[str, float]:
    """A GPU's KV link speeds as a transfer achieves them (line rate x KV_PATHS' efficiency,
    assumed 0.85 NIC / 0.8 NVLink, as `pdplan kv`), B/s, and its NVLink domain size."""
    return {
        "nic_bytes_per_s": g.nic_bytes_per_s * KV_PATHS["nic"]["efficiency"],
        "nvlink_bytes_per_s": g.scaleup_bytes_per_s * KV_PATHS["nvlink"]["efficiency"],
        "gpus_per_node": g.scaleup_domain,
    }
