"""`pdplan simulate`'s CLI-only setup: prefix caches from --prefix-cache, role-switch
schedules from --switch (helpers of cli/simulate.py; the cluster comes from plan.sim_deploy)."""

from __future__ import annotations

import math
from typing import Any

from pdplan.errors import ConfigError, InputError

__all__ = ["prefix_caches", "switches"]


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
    """Give every instance an LRU prefix cache: 'off', 'auto' (the whole KV pool, in the
    trace's blocks: vLLM / SGLang keep finished prompts' blocks in the KV cache until running
    requests need them, so this is an upper bound) or a number of blocks. A decode instance
    uses its own only while a role switch makes it a prefill instance (it starts empty)."""
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
    blocks = {n: min(int(setting), b) if setting != "auto" else b for n, b in pool.items()}
    return tuple(replace(i, prefix_cache_blocks=blocks[i.name]) for i in instances)
