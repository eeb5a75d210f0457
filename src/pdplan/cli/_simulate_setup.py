"""Build `pdplan simulate`'s cluster and traffic: cost models per pool GPU, workload specs, prefix
caches, role-switch schedules (helpers of cli/simulate.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pdplan.errors import ConfigError, InputError
from pdplan.sim import Arrivals, Pool, parse_deployment

__all__ = ["cost_model", "pools_on", "prefix_caches", "switches", "workload"]


def pools_on(deployment: str, gpu: str) -> list[Pool]:
    """The deployment's pools; one named '@' the default GPU runs on the same hardware."""
    from dataclasses import replace

    from pdplan.catalog.gpus import get_gpu

    default = get_gpu(gpu).name
    return [
        replace(p, gpu=None) if p.gpu and get_gpu(p.gpu).name == default else p
        for p in parse_deployment(deployment)
    ]


def cost_model(
    model: str, gpu: str, engine: str, weight_dtype: str | None = None, kv_dtype: str = "bf16"
) -> tuple[Any, Any, float, Any, Any]:
    """(make(role, layout, gpu) -> (StepModel, KV tokens), links(gpu) -> the GPU's link speeds
    and NVLink domain, KV bytes/token, the engine's Efficiency on the default GPU (whether it
    chunks prompts into mixed batches, its TTFT overhead and PD hand-off), the ModelSpec) from
    the catalog and the real cost model. `gpu` is the default; a pool may name its own
    ('4P:tp4@h100'). Every layout is checked on its GPU (e.g. TP must divide the attention
    heads) and must hold its weights (DoesNotFitError says by how much)."""
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

    return make, links, float(m.kv_bytes_per_token(kv_dtype)), eff, m


def workload(spec: str, duration: float | None) -> tuple[Any, Arrivals]:
    """A trace FILE (timestamps replayed) or 'poisson:rate=10,n=5000,isl=...,osl=...'."""
    import pdplan.workload as wlmod

    m = re.fullmatch(r"(poisson|closed):(.*)", spec.strip())
    if m is None:
        if not Path(spec).exists():
            kind = re.fullmatch(r"([A-Za-z_]+):.*", spec.strip())
            what = f"unknown synthetic workload kind {kind.group(1)!r}" if kind else "no such file"
            raise InputError(
                f"{what}: give a trace file, 'poisson:rate=R,n=N,isl=..,osl=..' (open loop) or "
                "'closed:c=C,n=N,isl=..,osl=..' (C clients)",
                path=spec,
            )
        wl = wlmod.read_workload(spec)  # type: ignore[attr-defined]
        return wl, Arrivals("trace" if wl.has_times else "poisson", duration_s=duration)
    parts = [p.strip() for p in m.group(2).split(",") if p.strip()]
    bare = [p for p in parts if "=" not in p]
    if bare:
        raise InputError(f"workload spec {spec!r}: {', '.join(bare)} is not KEY=VALUE")
    kw = dict(p.split("=", 1) for p in parts)
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


def switches(specs: list[str], instances: tuple[Any, ...]) -> tuple[Any, ...]:
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


def prefix_caches(instances: tuple[Any, ...], wl: Any, setting: str) -> tuple[Any, ...]:
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
