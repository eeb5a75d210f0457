"""Build `pdplan simulate`'s cluster: cost models per pool GPU, prefix caches, role-switch
schedules (helpers of cli/simulate.py)."""

from __future__ import annotations

import math
from typing import Any

from pdplan.errors import ConfigError, InputError
from pdplan.sim import Pool, parse_deployment

from ._common import warn

__all__ = ["cost_model", "pools_on", "prefix_caches", "switches"]


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
    (as `pdplan kv` takes them: line rate x KV_PATHS efficiency) and NVLink domain, the KV's
    parts (ModelSpec.kv_bytes_parts: B/token growing, windows, fixed state B), the engine's
    Efficiency on the default GPU (whether it
    chunks prompts into mixed batches, its TTFT overhead and PD hand-off), the ModelSpec) from
    the catalog and the real cost model. `gpu` is the default; a pool may name its own
    ('4P:tp4@h100'). Every layout is checked on its GPU (e.g. TP must divide the attention
    heads) and must hold its weights (DoesNotFitError says by how much)."""
    from functools import cache

    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.efficiency import get_efficiency
    from pdplan.perf.kv_transfer import KV_PATHS
    from pdplan.perf.memory import engine_kv_memory, plan_memory

    m = get_model(model)
    hw = cache(lambda name: get_gpu(name or gpu))
    g = hw(None)
    eff = get_efficiency(engine, g.name, g.hbm_gib)  # the engine's defaults on this GPU
    warned: set[str] = set()

    def make(role: str, layout: Any, on: str | None = None) -> tuple[Any, int]:
        gpu_spec = hw(on)
        lay = _checked(m, gpu_spec, layout, warned)
        frac, of_free = engine_kv_memory(engine)
        mem = plan_memory(
            m, gpu_spec, lay, weight_dtype, kv_dtype, mem_fraction=frac, of_free=of_free
        )
        cm = CostModel(m, gpu_spec, lay, engine, weight_dtype, kv_dtype)
        return cm, int(mem.kv_capacity_tokens)

    def links(on: str | None) -> dict[str, float]:
        s = hw(on)  # KV moves over NVLink inside one scale-up domain, else over the NICs
        return {  # B/s a transfer achieves: line rate x KV_PATHS' efficiency (assumed 0.85 / 0.8)
            "nic_bytes_per_s": s.nic_bytes_per_s * KV_PATHS["nic"]["efficiency"],
            "nvlink_bytes_per_s": s.scaleup_bytes_per_s * KV_PATHS["nvlink"]["efficiency"],
            "gpus_per_node": s.scaleup_domain,
        }

    return make, links, m.kv_bytes_parts(kv_dtype), eff, m


def _checked(model: Any, gpu: Any, layout: Any, warned: set[str]) -> Any:
    """The layout, refused when the model cannot be split so (plan.steady.valid_layout's
    rules); its warnings (TP or a stage crossing nodes, as `pdplan parallel` flags them)
    printed once per layout and GPU."""
    from pdplan.parallel import require_valid

    chk = require_valid(
        model, layout, scaleup_domain=gpu.scaleup_domain, gpus_per_node=gpu.gpus_per_node
    )
    for text in chk.warnings:
        line = f"layout {layout} on {gpu.name}: {text}"
        if line not in warned:
            warned.add(line)
            warn(line)
    return layout


_SWITCH_FORM = "use TIME_S:INSTANCE:ROLE, e.g. 600:prefill1:decode"


def switches(specs: list[str], instances: tuple[Any, ...]) -> tuple[Any, ...]:
    """'T:WHO:ROLE' -> RoleSwitch: at T seconds, instance WHO (its index, or its name's first
    part as the summary prints it, e.g. 'prefill1') drains and becomes ROLE. Each error names
    the part that is wrong; a switch to the role the instance has by then is refused."""
    from pdplan.sim import RoleSwitch

    names = {i.name.split(":")[0]: k for k, i in enumerate(instances)}
    out = [RoleSwitch(*_switch(spec, names, len(instances))) for spec in specs]
    roles = [i.role for i in instances]
    for spec, sw in sorted(zip(specs, out, strict=True), key=lambda x: x[1].time_s):
        if roles[sw.instance] == sw.role:
            who = instances[sw.instance].name.split(":")[0]
            raise ConfigError(
                f"--switch {spec!r}: {who} is already a {sw.role} instance at {sw.time_s:g} s; "
                "the switch would do nothing"
            )
        roles[sw.instance] = sw.role
    return tuple(out)


def _switch(spec: str, names: dict[str, int], n: int) -> tuple[float, int, str]:
    """(time s, instance index, role) of one --switch, or ConfigError naming the bad part."""

    def bad(what: str) -> ConfigError:
        return ConfigError(f"--switch {spec!r}: {what}; {_SWITCH_FORM}")

    parts = [p.strip() for p in spec.strip().lower().split(":")]
    if len(parts) != 3:
        raise bad(f"{len(parts)} part{'s' if len(parts) > 1 else ''}, expected 3")
    when, who, role = parts
    try:
        t = float(when)
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and t >= 0):
        raise bad(f"the time {when!r} must be a number of seconds >= 0")
    idx = int(who) if who.isdigit() else names.get(who, -1)
    if not 0 <= idx < n:
        raise bad(f"no instance {who!r} (instances: {', '.join(names)}, or their index 0-{n - 1})")
    if role not in ("prefill", "decode"):
        raise bad(f"the role {role!r} must be prefill or decode")
    return t, idx, role


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
    pool = {i.name: max(1, i.kv_capacity_tokens // wl.block_tokens) for i in instances}
    if setting != "auto":
        name = min((i.name for i in instances if i.role != "decode"), key=pool.__getitem__)
        if int(setting) > pool[name]:
            raise ConfigError(
                f"--prefix-cache {setting}: more blocks than the KV pool holds ({name}: "
                f"{pool[name]:,} blocks of {wl.block_tokens} tokens; cached prefixes live in "
                "it); use auto for the whole pool, or fewer blocks"
            )
    blocks = {n: int(setting) if setting != "auto" else b for n, b in pool.items()}
    return tuple(
        i if i.role == "decode" else replace(i, prefix_cache_blocks=blocks[i.name])
        for i in instances
    )
