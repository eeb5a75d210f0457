"""`pdplan simulate`'s CLI-only setup: prefix caches from --prefix-cache, role-switch
schedules from --switch, TensorRT-LLM context gates from --adp-balance / --batch-wait
(helpers of cli/simulate.py; the cluster comes from plan.sim_deploy)."""

from __future__ import annotations

import math
import re
from typing import Any

from pdplan._text import foreign_digits
from pdplan.errors import ConfigError, InputError

__all__ = ["ctx_gates", "finer_sampling", "prefix_caches", "switches"]

DEFAULT_SAMPLE_S = 1.0  # s, the timeline's sampling period unless --sample-interval says
MIN_SAMPLES = 20  # a run shorter than this many default periods is sampled more finely
SAMPLES_OF_SHORT_RUN = 107  # the periods a short run is cut into: a prime, so the period
# (its length / 107) rarely divides a trace's grid of whole seconds or milliseconds, whose
# burst instants a sample would otherwise always land on (docs/simulate-outputs.md)
MIN_SAMPLE_S = 1e-3  # s, sim.checks' floor on the period


def finer_sampling(run_s: float, given: float | None) -> float | None:
    """The period to sample a run of `run_s` seconds again at, or None: when no
    --sample-interval was given and the run lasted under MIN_SAMPLES default periods, its KV
    mean / peak (from the samples) rest on a few samples, the first at 0 s with nothing
    held (a 0.4 s run read 'KV used 0.0 % / 0.0 %'), so it is cut into SAMPLES_OF_SHORT_RUN."""
    if given is not None or not run_s >= 0 or run_s >= MIN_SAMPLES * DEFAULT_SAMPLE_S:
        return None
    return max(MIN_SAMPLE_S, run_s / SAMPLES_OF_SHORT_RUN)


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

    odd = foreign_digits(spec)
    if odd:  # float() / int() read '１:p0:decode' as 1 s
        raise bad(odd)
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
    idx = int(who) if re.fullmatch(r"[0-9]+", who) else names.get(who, -1)
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
    if setting != "auto" and not (re.fullmatch(r"[0-9]+", setting) and int(setting) > 0):
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


def _ints(flag: str, text: str, form: str, n_min: int, n_max: int) -> list[str]:
    parts = [p.strip() for p in text.strip().split(":")]
    if not n_min <= len(parts) <= n_max or not all(parts):
        raise ConfigError(f"{flag} {text!r}: use {form}")
    return parts


def _count(flag: str, text: str, what: str, least: int) -> int:
    """A count of iterations: ASCII digits, at most 9 (str.isdigit would take '²' or '６')."""
    if not (re.fullmatch(r"[0-9]{1,9}", text) and int(text) >= least):
        raise ConfigError(
            f"{flag}: {what} {text!r} must be a whole number of iterations, {least}-999999999"
        )
    return int(text)


def ctx_gates(
    instances: tuple[Any, ...], engine: str, adp_balance: str | None, batch_wait: str | None
) -> tuple[Any, ...]:
    """TensorRT-LLM's context gates on the aggregated instances (sim.gate.ContextGate):
    --adp-balance TIMEOUT[:WAIT] (attention_dp_config enable_balance, timeout_iters,
    batching_wait_iters; default WAIT 10, TensorRT-LLM's) on those with attention DP, and
    --batch-wait ITERS:RATIO (batch_wait_timeout_iters, batch_wait_max_tokens_ratio of the
    instance's max_num_tokens) on those without (TensorRT-LLM applies it only there)."""
    from dataclasses import replace

    from pdplan.sim.gate import ContextGate

    if adp_balance is None and batch_wait is None:
        return instances
    flag = "--adp-balance" if adp_balance is not None else "--batch-wait"
    if engine != "trtllm":
        raise ConfigError(f"{flag} is a TensorRT-LLM scheduler setting; add --engine trtllm")
    dp = [int(getattr(getattr(i.step_model, "layout", None), "dp", 1)) for i in instances]
    agg = [i.role == "agg" for i in instances]
    gates: list[Any] = [None] * len(instances)
    if adp_balance is not None:
        parts = _ints("--adp-balance", adp_balance, "TIMEOUT_ITERS[:WAIT_ITERS], e.g. 60:0", 1, 2)
        timeout = _count("--adp-balance", parts[0], "the timeout", 1)
        wait = _count("--adp-balance", parts[1], "the batching wait", 0) if len(parts) > 1 else 10
        if not any(a and d > 1 for a, d in zip(agg, dp, strict=True)):
            raise _no_gated_pool(
                "--adp-balance balances the attention-DP ranks of aggregated pools",
                "no aggregated pool has a dpN layout",
                agg,
            )
        for k, (a, d) in enumerate(zip(agg, dp, strict=True)):
            if a and d > 1:
                gates[k] = ContextGate("balance", timeout, ranks=d, wait_steps=wait)
    if batch_wait is not None:
        parts = _ints("--batch-wait", batch_wait, "ITERS:RATIO, e.g. 40:0.8", 2, 2)
        iters = _count("--batch-wait", parts[0], "the timeout", 1)
        try:
            ratio = float(parts[1])
        except ValueError:
            ratio = -1.0
        if not 0 < ratio <= 1:
            raise ConfigError(f"--batch-wait: the ratio {parts[1]!r} must be in (0, 1]")
        if not any(a and d == 1 for a, d in zip(agg, dp, strict=True)):
            raise _no_gated_pool(
                "--batch-wait holds prompts behind the decodes of aggregated pools without "
                "attention DP",
                "no aggregated pool has a layout without dpN",
                agg,
            )
        for k, (a, d) in enumerate(zip(agg, dp, strict=True)):
            if a and d == 1:
                budget = int(instances[k].prefill_token_budget)  # max_num_tokens, tokens
                gates[k] = ContextGate("batch", iters, tokens=max(1, int(ratio * budget)))
    return tuple(replace(i, ctx_gate=g) if g else i for i, g in zip(instances, gates, strict=True))


def _no_gated_pool(what: str, why: str, agg: list[bool]) -> ConfigError:
    """The error for a context gate no instance takes: `what` the gate does, then `why` none
    takes it, or, in a deployment of prefill and decode pools only, that there is no aggregated
    pool at all (a prefill-only instance runs no decodes to hold prompts behind)."""
    flag = what.split()[0]
    if not any(agg):
        why = (
            "this deployment has no aggregated pool, only prefill and decode pools (a "
            "prefill-only instance runs no decodes to hold prompts behind); drop " + flag
        )
    return ConfigError(f"{what}: {why}")
