"""A simulated sequence's KV shape, filled from the instances' cost model when not given."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pdplan.errors import ConfigError

if TYPE_CHECKING:
    from pdplan.sim.config import InstanceSpec, SimConfig

__all__ = ["fill_kv_shape", "longest_fit", "seq_state_tokens"]


def fill_kv_shape(cfg: SimConfig) -> None:
    """Fill unset KV parts / layers from the instances' model, then refuse bad ones."""
    a, windows, state, layers = _kv_shape(cfg.instances)
    if not (cfg.kv_bytes_per_token or cfg.kv_windows or cfg.kv_state_bytes):
        object.__setattr__(cfg, "kv_bytes_per_token", a)
        object.__setattr__(cfg, "kv_windows", windows)
        object.__setattr__(cfg, "kv_state_bytes", state)
    if not cfg.kv_layers:
        object.__setattr__(cfg, "kv_layers", layers)
    object.__setattr__(cfg, "kv_windows", tuple((int(w), float(b)) for w, b in cfg.kv_windows))
    bad_window = any(not (w >= 1 and b >= 0 and math.isfinite(b)) for w, b in cfg.kv_windows)
    if bad_window or not (cfg.kv_state_bytes >= 0 and math.isfinite(cfg.kv_state_bytes)):
        raise ConfigError(
            f"kv_windows={cfg.kv_windows} need windows >= 1 token and B/token >= 0, "
            f"kv_state_bytes={cfg.kv_state_bytes} B >= 0"
        )
    if not (cfg.kv_bytes_per_token >= 0 and cfg.kv_bytes(1) > 0 and cfg.kv_layers >= 1):
        raise ConfigError(
            f"kv_bytes_per_token={cfg.kv_bytes_per_token} B must be >= 0, a token's KV "
            f"({cfg.kv_bytes(1)} B with windows and state) positive and kv_layers="
            f"{cfg.kv_layers} >= 1"
        )


# Without a cost model to ask (a bare StepModel): Llama-3.1-70B at BF16, 2 (K, V) x 80 layers x
# 8 KV heads x 128 dims x 2 B = 327,680 B per token (meta-llama/Llama-3.1-70B config.json).
_FALLBACK_KV: tuple[float, tuple[tuple[int, float], ...], float, int] = (327_680.0, (), 0.0, 80)


def _kv_shape(
    instances: tuple[InstanceSpec, ...],
) -> tuple[float, tuple[tuple[int, float], ...], float, int]:
    """(growing KV B/token, windows, fixed state B, layers) of the first instance's model at
    its KV dtype (ModelSpec.kv_bytes_parts), when its step model is a cost model (has .model
    and .kv_dtype); else the Llama-3.1-70B fallback."""
    for inst in instances:
        model = getattr(inst.step_model, "model", None)
        kv_dtype = getattr(inst.step_model, "kv_dtype", None)
        if model is not None and kv_dtype is not None:
            a, windows, state = model.kv_bytes_parts(kv_dtype)
            return float(a), windows, float(state), int(model.num_layers)
    return _FALLBACK_KV


def seq_state_tokens(cfg: SimConfig, spec: InstanceSpec) -> int:
    """KV-pool tokens one sequence's fixed recurrent state takes on an instance: its
    kv_state_tokens, else ceil(kv_state_bytes / a token's KV without the state), both of the
    whole model (the same ratio as per GPU when state and KV split alike over TP)."""
    if spec.kv_state_tokens is not None:
        return spec.kv_state_tokens
    state = cfg.kv_state_bytes
    per_token = cfg.kv_bytes(1) - state  # B: growing + window layers' first token
    return math.ceil(state / per_token) if state > 0 and per_token > 0 else 0


def longest_fit(cap: int, st: int, wins: tuple[tuple[int, float], ...]) -> int:
    """The most tokens L (prompt + output) one sequence may reach alone in a pool of `cap`
    tokens: L + st + ceil(sum c * min(L, W)) <= cap (InstanceSpec.kv_window_tokens, Instance.
    seq_fixed). Past every window it is cap - st - ceil(sum c * W); below one a shorter
    sequence is charged only the window it fills, so the bound is searched (once per
    instance). Taking every window full dropped a short request that fits a small pool."""
    full = cap - st - math.ceil(sum(c * w for w, c in wins))  # tokens, windows full
    if not wins or full >= max(w for w, _ in wins):
        return full

    def need(n: int) -> int:  # pool tokens a sequence of n tokens holds, non-decreasing in n
        return n + st + math.ceil(sum(c * (n if n < w else w) for w, c in wins))

    if need(0) > cap:
        return full  # not even the state fits (negative)
    lo, hi = 0, cap  # need(lo) <= cap; need(n) >= n > cap past hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if need(mid) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo
