"""Build `pdplan simulate`'s cluster and traffic: cost models per pool GPU, workload specs, prefix
caches, role-switch schedules (helpers of cli/simulate.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pdplan.errors import ConfigError, InputError
from pdplan.sim import Arrivals, Pool, parse_deployment

from ._common import note

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


# Keys a synthetic workload spec takes, by kind (aliases: isl = input, osl = output,
# c = concurrency); lengths are pdplan LengthSpecs ('1024', 'lognormal:mean=800,cv=1.2', ...).
_SPEC_KEYS = {
    "poisson": ("n", "rate", "isl", "osl"),
    "closed": ("n", "c", "think", "isl", "osl"),
}
_ALIASES = {"input": "isl", "output": "osl", "concurrency": "c"}
_SPEC_HELP = (
    "give a trace file, 'poisson:rate=R,n=N,isl=..,osl=..' (open loop) or "
    "'closed:c=C,n=N,isl=..,osl=..[,think=S]' (C clients)"
)


def workload(spec: str, duration: float | None, trace: dict[str, Any] | None = None) -> Any:
    """(Workload, Arrivals) for a trace FILE (its timestamps replayed, or `trace['rate']`
    Poisson arrivals, or `trace['clients']` closed-loop clients; `trace` also carries the
    reader's fmt / mapping / skip_bad) or a synthetic 'poisson:...' / 'closed:...' spec."""
    t = {k: v for k, v in (trace or {}).items() if v not in (None, False)}
    m = re.fullmatch(r"(poisson|closed):(.*)", spec.strip())
    if m is None:
        return _trace_workload(spec, duration, t)
    _refuse_trace_options(t)
    kind, kw = m.group(1), _spec_keys(spec, m.group(1), m.group(2))
    if kind == "closed" and duration is not None:
        raise ConfigError(
            "--duration limits open-loop arrivals; a closed loop runs its n requests "
            "(lower n to shorten it)"
        )
    try:
        n = int(kw.get("n", "1000"))
        rate = float(kw.get("rate", "0") or 0)
        conc = int(kw.get("c", "1"))
        think = float(kw.get("think", "0"))
    except ValueError as exc:
        raise InputError(f"bad number in workload spec {spec!r}: {exc}") from exc
    if n < 1:
        raise InputError(f"n must be >= 1 in workload spec {spec!r}")
    import pdplan.workload as wlmod

    lengths = _lengths(kw, kind)
    wl = wlmod.synthesize(n=n, rate=rate or 1.0, **lengths)  # type: ignore[attr-defined]
    if kind == "closed":
        if conc < 1:
            raise InputError(f"c (closed-loop clients) must be >= 1 in workload spec {spec!r}")
        return wl, Arrivals("closed", concurrency=conc, think_s=think)
    return wl, Arrivals("poisson", rate=rate, duration_s=duration)


# The trace-reading options as `pdplan simulate` spells them (keys of workload()'s `trace`)
_TRACE_FLAGS = {
    "fmt": "--format",
    "mapping": "--map",
    "skip_bad": "--skip-bad",
    "rate": "--rate",
    "clients": "--clients",
}
_LENGTH_DEFAULTS = {"isl": ("1024", "input"), "osl": ("256", "output")}


def _refuse_trace_options(t: dict[str, Any]) -> None:
    """A synthetic spec would ignore the trace-file options: name the ones given."""
    if not t:
        return
    flags = [_TRACE_FLAGS.get(k, "--" + k.replace("_", "-")) for k in t]
    verb = "applies" if len(flags) == 1 else "apply"
    raise ConfigError(
        f"{', '.join(flags)} {verb} only to a trace file; a synthetic spec takes its own keys "
        "('poisson:rate=R,n=N,isl=..,osl=..' or 'closed:c=C,n=N,isl=..,osl=..')"
    )


def _lengths(kw: dict[str, str], kind: str) -> dict[str, str]:
    """synthesize()'s input / output length specs; one note names the defaults used."""
    missing = [k for k in _LENGTH_DEFAULTS if k not in kw]
    if missing:
        used = " and ".join(
            f"{k}={_LENGTH_DEFAULTS[k][0]} ({_LENGTH_DEFAULTS[k][1]} tokens)" for k in missing
        )
        note(
            f"the {kind} spec gives no {' or '.join(missing)}: every request gets {used}; "
            "give N, uniform:LO:HI or lognormal:MEAN:SIGMA"
        )
    return {what: kw.get(k, default) for k, (default, what) in _LENGTH_DEFAULTS.items()}


def _spec_keys(spec: str, kind: str, body: str) -> dict[str, str]:
    """KEY=VALUE parts of a synthetic spec, aliases resolved; unknown, misplaced or
    repeated keys are errors (a key the kind does not use would be silently ignored)."""
    parts = [p.strip() for p in body.split(",") if p.strip()]
    bare = [p for p in parts if "=" not in p]
    if bare:
        raise InputError(f"workload spec {spec!r}: {', '.join(bare)} is not KEY=VALUE")
    kw: dict[str, str] = {}
    for part in parts:
        key, value = (x.strip() for x in part.split("=", 1))
        name = _ALIASES.get(key.lower(), key.lower())
        if name not in _SPEC_KEYS[kind]:
            other = "closed" if kind == "poisson" else "poisson"
            what = f"{other}-only key" if name in _SPEC_KEYS[other] else "unknown key"
            raise InputError(
                f"workload spec {spec!r}: {what} {key!r} ({kind} takes "
                f"{', '.join(_SPEC_KEYS[kind])})"
            )
        if name in kw:
            raise InputError(f"workload spec {spec!r}: {name} given twice")
        kw[name] = value
    return kw


def _trace_workload(spec: str, duration: float | None, t: dict[str, Any]) -> Any:
    """A trace file with its arrivals: timestamps, --rate (Poisson) or --clients (closed)."""
    import pdplan.workload as wlmod

    if not Path(spec).exists() and not spec.startswith(("http://", "https://")):
        kind = re.fullmatch(r"([A-Za-z_]+):.*", spec.strip())
        what = f"unknown synthetic workload kind {kind.group(1)!r}" if kind else "no such file"
        raise InputError(f"{what}: {_SPEC_HELP}", path=spec)
    rate, clients = t.pop("rate", None), t.pop("clients", None)
    if rate is not None and clients is not None:
        raise ConfigError("give --rate (open loop) or --clients (closed loop), not both")
    if rate is not None and not rate > 0:
        raise ConfigError(f"--rate={rate} must be > 0 requests/s")
    if clients is not None and duration is not None:
        raise ConfigError("--duration limits open-loop arrivals; with --clients all requests run")
    wl = wlmod.read_workload(  # type: ignore[attr-defined]
        spec, fmt=t.get("fmt"), mapping=t.get("mapping"), skip_bad=bool(t.get("skip_bad"))
    )
    if clients is not None:
        return wl, Arrivals("closed", concurrency=int(clients))
    if rate is not None:
        return wl, Arrivals("poisson", rate=float(rate), duration_s=duration)
    if not wl.has_times:
        raise InputError(
            "the trace has no timestamps: give --rate R (Poisson arrivals at R requests/s) or "
            "--clients C (C closed-loop clients) to replay its lengths",
            path=spec,
        )
    return wl, Arrivals("trace", duration_s=duration)


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
