"""Validation of the simulator's specs at the edge: named errors, never a bare exception."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, TypeGuard

from pdplan.errors import ConfigError

if TYPE_CHECKING:
    from pdplan.sim.config import InstanceSpec, RoleSwitch, SimConfig

__all__ = [
    "MIN_SAMPLE_INTERVAL_S",
    "check_instance",
    "check_numbers",
    "check_policy_interval",
    "check_role_switch",
    "check_run",
    "check_switch",
]

# a timeline finer than this adds nothing (engine steps last >= ~1 ms) and its samples could
# outgrow memory (every instance is sampled at every instant)
MIN_SAMPLE_INTERVAL_S = 1e-3

# InstanceSpec integer fields and their least value
_INTS = {
    "max_batch": 1,
    "kv_capacity_tokens": 1,
    "gpus": 1,
    "prefill_token_budget": 1,
    "recv_interval": 1,
    "kv_senders": 0,
    "prefix_cache_blocks": 0,
}
_RATES = ("nic_bytes_per_s", "nvlink_bytes_per_s", "pcie_bytes_per_s")  # B/s, > 0


def _is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, Integral) and not isinstance(v, bool)


def _is_real(v: Any) -> TypeGuard[float]:
    return isinstance(v, Real) and not isinstance(v, bool)


def check_instance(spec: InstanceSpec) -> None:
    """Refuse an InstanceSpec the simulator cannot run: no step model, a non-integer or
    too-small count, a link speed that is not a positive finite B/s, a gate or recv interval
    on a role that never uses it."""
    sm = spec.step_model
    if not (
        callable(getattr(sm, "step_time", None)) and callable(getattr(sm, "decode_affine", None))
    ):
        raise ConfigError(
            f"step_model must be a perf.step.StepModel (with step_time() and "
            f"decode_affine()), not {type(sm).__name__}"
        )
    if not isinstance(spec.name, str):
        raise ConfigError(f"name={spec.name!r} must be a string")
    _probe_step_model(sm)
    for name, least in _INTS.items():
        v = getattr(spec, name)
        if not (_is_int(v) and v >= least):
            raise ConfigError(f"{name}={v!r} must be an integer >= {least}")
    st = spec.kv_state_tokens
    if st is not None and not (_is_int(st) and st >= 0):
        raise ConfigError(f"kv_state_tokens={st!r} must be an integer >= 0 or None")
    _check_window_charges(spec.kv_window_tokens)
    if spec.kv_senders > spec.gpus:
        raise ConfigError(f"kv_senders={spec.kv_senders} must be in 0..gpus={spec.gpus}")
    if spec.chunk_budget is not None and not (
        _is_int(spec.chunk_budget) and spec.chunk_budget >= 1
    ):
        raise ConfigError(f"chunk_budget={spec.chunk_budget!r} must be an integer >= 1 or None")
    for name in _RATES:
        v = getattr(spec, name)
        if not (_is_real(v) and 0 < v < math.inf):
            raise ConfigError(f"{name}={v!r} must be a positive finite number of B/s")
    if not _is_int(spec.node):
        raise ConfigError(f"node={spec.node!r} must be an integer")
    if spec.ctx_gate is not None:
        from pdplan.sim.gate import ContextGate

        if not isinstance(spec.ctx_gate, ContextGate):
            raise ConfigError(
                f"ctx_gate must be a sim.gate.ContextGate or None, not {spec.ctx_gate!r}"
            )
        if spec.recv_interval > 1:
            raise ConfigError("ctx_gate and recv_interval > 1 cannot be combined on one instance")
    if not isinstance(spec.kv_reserve_output, bool):
        raise ConfigError(f"kv_reserve_output={spec.kv_reserve_output!r} must be True or False")
    if spec.role != "agg" and spec.kv_reserve_output:
        raise ConfigError(
            f"kv_reserve_output is modelled on aggregated instances only, not on a {spec.role} "
            "instance"
        )
    if spec.role != "agg" and (spec.ctx_gate is not None or spec.recv_interval > 1):
        raise ConfigError(
            f"ctx_gate and recv_interval > 1 are modelled on aggregated instances only (the "
            f"scheduler's polls between decode steps), not on a {spec.role} instance"
        )


def _probe_step_model(sm: Any) -> None:
    """One prompt step and one decode run priced at construction: times that are not finite
    numbers >= 0 s (a model with negative, NaN or infinite terms) are refused here, not met
    mid-run as negative latencies or a hang."""
    from pdplan.perf.step import BatchShape

    try:
        prompt = sm.step_time(BatchShape(128, 128 * 129 / 2, 1, 1, 128))
        a, c = sm.decode_affine(1)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ConfigError(
            f"step_model {type(sm).__name__} failed on a small batch: {exc}"
        ) from None
    for what, v in (("a prompt step", prompt), ("a decode step", a), ("its per-token slope", c)):
        if not (_is_real(v) and 0 <= v < math.inf):
            raise ConfigError(
                f"step_model {type(sm).__name__} gives {what} of {v!r}: step times must be "
                "finite numbers of seconds >= 0"
            )


def check_numbers(cfg: SimConfig) -> None:
    """SimConfig's scalars: instances a non-empty sequence of InstanceSpec, SLOs and times
    positive, an integer seed, a policy with a positive interval."""
    from pdplan.sim.config import InstanceSpec, RoleSwitch

    if not (isinstance(cfg.instances, tuple) and cfg.instances):
        raise ConfigError("instances must be a non-empty tuple of InstanceSpec")
    if not all(isinstance(i, InstanceSpec) for i in cfg.instances):
        raise ConfigError("instances must be a non-empty tuple of InstanceSpec")
    for name in ("exact", "trace", "decode_prealloc"):
        if not isinstance(getattr(cfg, name), bool):
            raise ConfigError(f"{name}={getattr(cfg, name)!r} must be True or False")
    for name in ("ttft_slo_s", "tpot_slo_s"):
        v = getattr(cfg, name)
        if not (_is_real(v) and v > 0 and not math.isnan(v)):
            raise ConfigError(f"{name}={v!r} must be > 0 s")
    v = cfg.sample_interval_s
    if not (_is_real(v) and MIN_SAMPLE_INTERVAL_S <= v < math.inf):
        raise ConfigError(f"sample_interval_s={v!r} must be a number of seconds >= 0.001")
    for name in _FINITE:
        v = getattr(cfg, name)
        if not (_is_real(v) and 0 <= v < math.inf):
            raise ConfigError(f"{name}={v!r} must be a finite number >= 0")
    if not (_is_int(cfg.kv_layers) and cfg.kv_layers >= 0):
        raise ConfigError(f"kv_layers={cfg.kv_layers!r} must be an integer >= 0")
    if not (_is_int(cfg.seed) and cfg.seed >= 0):
        raise ConfigError(f"seed={cfg.seed!r} must be an integer >= 0")
    _check_windows(cfg.kv_windows)
    if not (
        isinstance(cfg.switches, tuple) and all(isinstance(w, RoleSwitch) for w in cfg.switches)
    ):
        raise ConfigError("switches must be a tuple of RoleSwitch")
    pol = cfg.policy
    if pol is not None:
        check_policy_interval(pol)
        if not callable(getattr(pol, "decide", None)):
            raise ConfigError("the switch policy needs a decide(now_s, view) method")


def check_policy_interval(pol: Any, when: str = "") -> float:
    """The switch policy's interval_s, s: a finite number >= MIN_SAMPLE_INTERVAL_S. Checked
    when the config is built and again at every tick (`when` says so), as a policy may change
    it: 0 would tick forever at one instant, a negative, NaN or non-number one would fail
    deep in the event loop."""
    interval = getattr(pol, "interval_s", None)
    if not (_is_real(interval) and MIN_SAMPLE_INTERVAL_S <= interval < math.inf):
        raise ConfigError(
            f"the switch policy's interval_s={interval!r}{when} must be a number of seconds "
            f">= {MIN_SAMPLE_INTERVAL_S:g} (engines step every >= ~1 ms)"
        )
    return float(interval)


# SimConfig fields that are finite numbers >= 0 (s, s/token, B, steps)
_FINITE = (
    "link_latency_s", "nvlink_latency_s", "switch_cost_s", "frontend_s", "frontend_token_s",
    "ttft_overhead_s", "ttft_decode_steps", "handoff_s", "kv_bytes_per_token", "kv_state_bytes",
)  # fmt: skip


def _check_windows(windows: Any) -> None:
    """kv_windows: ((window tokens >= 1, B/token >= 0), ...), all finite."""
    ok = isinstance(windows, tuple | list)
    for w in windows if ok else ():
        ok = ok and isinstance(w, tuple | list) and len(w) == 2
        ok = ok and all(_is_real(x) and 0 <= x < math.inf for x in w) and w[0] >= 1
        ok = ok and float(w[0]).is_integer()  # a window is a whole number of tokens
    if not ok:
        raise ConfigError(
            f"kv_windows={windows!r} must be ((window tokens >= 1, B/token >= 0), ...)"
        )


def check_role_switch(sw: RoleSwitch) -> None:
    """A RoleSwitch's own fields: a finite time >= 0 s, an integer instance, a role."""
    if not (_is_real(sw.time_s) and 0 <= sw.time_s < math.inf):
        raise ConfigError(f"role switch time_s={sw.time_s!r} must be a finite number >= 0 s")
    if not _is_int(sw.instance):
        raise ConfigError(f"role switch instance={sw.instance!r} must be an instance index")
    if sw.role not in ("prefill", "decode"):
        raise ConfigError(f"role switch role={sw.role!r} must be prefill or decode")


def check_switch(sw: RoleSwitch, n_instances: int, source: str) -> None:
    """A role switch names an existing instance and a disaggregated role."""
    if not (_is_int(sw.instance) and 0 <= sw.instance < n_instances):
        raise ConfigError(
            f"{source} role switch {sw}: instance must be an index in 0..{n_instances - 1}"
        )
    if sw.role not in ("prefill", "decode"):
        raise ConfigError(f"{source} role switch {sw}: role must be prefill or decode")


def check_run(cfg: Any, wl: Any, arrivals: Any, warmup: Any, until: Any) -> None:
    """simulate()'s arguments: a SimConfig, a Workload, Arrivals or None, an integer warm-up
    in [0, requests) (0 for an empty workload), an `until` that is a number of seconds >= 0."""
    from pdplan.sim.arrivals import Arrivals
    from pdplan.sim.config import SimConfig
    from pdplan.workload.core import Workload

    for name, v, kind in (("cfg", cfg, SimConfig), ("wl", wl, Workload)):
        if not isinstance(v, kind):
            raise ConfigError(f"{name} must be a {kind.__name__}, not {type(v).__name__}")
    if arrivals is not None and not isinstance(arrivals, Arrivals):
        raise ConfigError(f"arrivals must be an Arrivals or None, not {type(arrivals).__name__}")
    n = len(wl)
    if not (_is_int(warmup) and 0 <= warmup and (warmup < n or warmup == n == 0)):
        raise ConfigError(
            f"warmup={warmup!r} must be an integer in 0..{max(n - 1, 0)} (requests before it "
            f"are not measured; the workload has {n})"
        )
    if not (_is_real(until) and until >= 0):
        raise ConfigError(f"until={until!r} must be a number of seconds >= 0 (or math.inf)")


def _check_window_charges(wins: object) -> None:
    """InstanceSpec.kv_window_tokens: pairs (W >= 1 tokens, c >= 0 pool tokens per token)."""
    ok = isinstance(wins, tuple) and all(
        isinstance(p, tuple)
        and len(p) == 2
        and _is_int(p[0])
        and p[0] >= 1
        and _is_real(p[1])
        and 0 <= p[1] < math.inf
        for p in wins
    )
    if not ok:
        raise ConfigError(
            f"kv_window_tokens={wins!r} must be a tuple of (window >= 1 tokens, KV-pool "
            f"tokens >= 0 per windowed token) pairs"
        )
