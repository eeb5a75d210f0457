"""Steady-state estimate of one deployment (agg or xPyD): validity, memory, cost model, KV move."""

from __future__ import annotations

from typing import Any

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import DoesNotFitError
from pdplan.parallel.checks import check_layout, require_valid
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.estimate import estimate_agg, estimate_disagg
from pdplan.perf.memory import MemoryPlan, engine_kv_memory, plan_memory
from pdplan.perf.spec_decode import SpecCostModel, parse_spec
from pdplan.plan.kv_route import kv_route

__all__ = ["estimate_deployment", "layout_warnings", "valid_layout"]


def valid_layout(model: ModelSpec, gpu: GPUSpec, text: str | Layout) -> Layout:
    """Parse a layout and refuse it with the reason when the model cannot be split that way."""
    lay = text if isinstance(text, Layout) else Layout.parse(text)
    require_valid(model, lay, scaleup_domain=gpu.scaleup_domain, gpus_per_node=gpu.gpus_per_node)
    return lay


def layout_warnings(model: ModelSpec, gpu: GPUSpec, runs: list[tuple[Layout, int]]) -> list[str]:
    """The cautions `pdplan parallel` gives each valid (layout, context tokens) run, once each:
    TP or a stage past the scale-up domain, and CP at a context below CP_MIN_CONTEXT, which
    `parallel` refuses and which a layout given explicitly here runs anyway, with the warning
    (the errors check_layout adds once the context is known are exactly the CP one)."""
    dom = {"scaleup_domain": gpu.scaleup_domain, "gpus_per_node": gpu.gpus_per_node}
    out: list[str] = []
    for lay, context in runs:
        bare = check_layout(model, lay, **dom)
        full = check_layout(model, lay, **dom, context_len=context)
        out += full.warnings
        out += [
            f"{lay}: {e}; `pdplan parallel` refuses it; used as given"
            for e in full.errors
            if e not in bare.errors
        ]
    return list(dict.fromkeys(out))


def _drafts(kw: dict[str, Any]) -> int:
    return 0 if kw["spec"] is None else int(kw["spec"].draft_layers)


def _cost(m: ModelSpec, g: GPUSpec, lay: Layout, kw: dict[str, Any]) -> CostModel:
    """The decoding instance's cost model (speculative when kw["spec"] says so)."""
    args = (m, g, lay, kw["engine"], kw["weight_dtype"], kw["kv_dtype"])
    return CostModel(*args) if kw["spec"] is None else SpecCostModel(*args, spec=kw["spec"])


def _mem(
    m: ModelSpec, g: GPUSpec, lay: Layout, cm: CostModel, kw: dict[str, Any], context: int
) -> MemoryPlan:
    """Memory of one instance as its engine sizes the KV pool by default (vLLM 0.9 of the
    device, TensorRT-LLM 0.9 of what is free, SGLang its own rule for the launch)."""
    frac, of_free = engine_kv_memory(kw["engine"], g, lay, chunk_tokens=cm.eff.prefill_chunk,
                                     speculative=kw["spec"] is not None)  # fmt: skip
    frac = frac if kw.get("mem_fraction") is None else kw["mem_fraction"]
    return plan_memory(m, g, lay, kw["weight_dtype"], kw["kv_dtype"], context=context,
                       draft_layers=_drafts(kw), mem_fraction=frac, of_free=of_free)  # fmt: skip


def _agg(m: ModelSpec, g: GPUSpec, lay: Layout, kw: dict[str, Any]) -> dict[str, Any]:
    isl, osl = kw["isl"], kw["osl"]
    cm = _cost(m, g, lay, kw)
    mem = _mem(m, g, lay, cm, kw, isl + osl)
    est = estimate_agg(
        cm,
        isl,
        osl,
        kw["concurrency"],
        kv_capacity_tokens=mem.kv_capacity_tokens,
        max_batch=cm.max_running,  # the engine's max_num_seqs / max_running_requests
        rounds=kw["rounds"],
    )
    return {"layout": str(lay), "gpus": lay.gpus, "memory": mem.to_dict(), "est": est}


def _disagg(m: ModelSpec, g: GPUSpec, pl: Layout, dl: Layout, kw: dict[str, Any]) -> dict[str, Any]:
    isl, osl, kvd = kw["isl"], kw["osl"], kw["kv_dtype"]
    np_, nd = kw["prefill_workers"], kw["decode_workers"]
    pcm, dcm = _cost(m, g, pl, kw), _cost(m, g, dl, kw)
    pmem = _mem(m, g, pl, pcm, kw, isl)  # refuses
    if pmem.kv_capacity_tokens < isl:  # a prefill instance holds a prompt's KV until it is sent
        raise DoesNotFitError(
            f"KV capacity {pmem.kv_capacity_tokens:,} tokens per prefill instance holds no "
            f"prompt of ISL = {isl:,} tokens (short by {isl - pmem.kv_capacity_tokens:,})",
            need_bytes=isl * pmem.kv_bytes_per_token,
            have_bytes=pmem.kv_bytes,
        )
    dmem = _mem(m, g, dl, dcm, kw, isl + osl)
    # NVLink when P and D share a node as `simulate` places them, else the NIC (plan.kv_route)
    xfer = kv_route(m, g, isl, kvd, (pl, dl), (np_, nd))
    est = estimate_disagg(
        pcm,  # with speculation it runs the draft head over the prompt too
        dcm,
        isl,
        osl,
        kw["concurrency"],
        n_prefill=np_,
        n_decode=nd,
        kv_transfer_s=xfer.time_s,
        decode_kv_capacity_tokens=dmem.kv_capacity_tokens,
        decode_max_batch=dcm.max_running,
        rounds=kw["rounds"],
    )
    return {
        "prefill_layout": str(pl),
        "decode_layout": str(dl),
        "prefill_workers": np_,
        "decode_workers": nd,
        "gpus": pl.gpus * np_ + dl.gpus * nd,
        "kv_transfer_ms": xfer.time_s * 1e3,
        "kv_path": xfer.path,  # nvlink, nic or mixed (P -> D pairs on one node: the share)
        "kv_nvlink_share": xfer.nvlink_share,
        "memory": dmem.to_dict(),
        "est": est,
    }


def estimate_deployment(
    model: ModelSpec,
    gpu: GPUSpec,
    *,
    isl: int,
    osl: int,
    concurrency: int,
    layout: str | Layout | None = "tp4",
    prefill_layout: str | Layout | None = None,
    decode_layout: str | Layout | None = None,
    prefill_workers: int = 1,
    decode_workers: int = 1,
    engine: str = "vllm",
    weight_dtype: str | None = None,
    kv_dtype: str = "bf16",
    rounds: float | None = None,
    spec_decode: str | None = None,
    mem_fraction: float | None = None,
) -> dict[str, Any]:
    """Steady state of C closed-loop clients at fixed ISL/OSL. Aggregated when both
    prefill_layout and decode_layout are None, else disaggregated; spec_decode
    'METHOD:K[:ACCEPTANCE]' decodes speculatively (perf.spec_decode); mem_fraction overrides
    the engine's KV-sizing fraction (sim_deploy.build_cluster says how each engine reads it).
    JSON-able dict (the
    Estimate object under "est" is replaced by its dict under "estimate")."""
    kw: dict[str, Any] = {
        "spec": parse_spec(spec_decode or ""),
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
        "engine": engine,
        "weight_dtype": weight_dtype,
        "kv_dtype": kv_dtype,
        "rounds": rounds,
        "mem_fraction": mem_fraction,
        "prefill_workers": prefill_workers,
        "decode_workers": decode_workers,
    }
    out: dict[str, Any] = {
        "model": model.name,
        "gpu": gpu.name,
        "engine": engine,
        "isl": isl,
        "osl": osl,
        "concurrency": concurrency,
    }
    if prefill_layout is None and decode_layout is None:
        out |= {"mode": "agg", **_agg(model, gpu, valid_layout(model, gpu, layout or "tp1"), kw)}
    else:
        pl = valid_layout(model, gpu, prefill_layout or layout or "tp1")
        dl = valid_layout(model, gpu, decode_layout or layout or "tp1")
        out |= {"mode": "disagg", **_disagg(model, gpu, pl, dl, kw)}
    est = out.pop("est")
    out["estimate"] = est.to_dict()
    if kw["spec"] is not None:
        out["spec_decode"] = kw["spec"].to_dict()
    out["output_tokens_per_s_per_gpu"] = est.throughput_rps * osl / out["gpus"]
    return out
