"""The xPyD ratio (seed s6): from numbers, from a step model, and from a length distribution.

Seed s6: N_p = lambda*Tin/(P*rho), N_d = lambda*Tout/(D*rho), so N_p:N_d = (Tin/P):(Tout/D).
Here P and D are per-GPU tokens/s; "prefill" and "decode" below are GPU-seconds per request.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pdplan._text import count, gpus
from pdplan.errors import ConfigError
from pdplan.plan.ratio_lengths import LengthEffect, prefill_by_distribution

__all__ = [
    "DEFAULT_RHO",
    "MAX_POOL",
    "LengthEffect",
    "ModelRatio",
    "RatioResult",
    "check_pool",
    "decode_point",
    "infeasible_note",
    "prefill_by_distribution",
    "ratio_from_model",
    "ratio_from_numbers",
    "small_ratio",
]

DEFAULT_RHO = 0.7  # seed s6: target utilisation <= 0.7 leaves burst headroom
# Largest pool a plan prints, GPUs or instances: 10x the largest GPU clusters built (xAI's
# Colossus, ~1e5 H100/H200 in 2024); a rate needing more is a typo (e.g. tokens/s as QPS).
MAX_POOL = 1_000_000

# prompt length -> instance-seconds per prompt on one prefill instance. pdplan ratio passes
# the loaded cost (perf.prefill_rate.loaded_prefill: prompts packed up to the token budget,
# pp batches in flight), which is what a busy pool's size follows.
PrefillFn = Callable[[int], float]
DecodeFn = Callable[[int, float], float]  # (batch, mean context per seq) -> seconds per step


def small_ratio(a: float, b: float, max_small: int = 4, tol: float = 0.05) -> str:
    """a:b as small integers: the smaller side becomes 1..max_small, the other is rounded;
    the first smaller side within `tol` relative error wins. 0.5:0.25 -> "2:1",
    0.0625:1 -> "1:16" (the seed's rounding), 0.3:0.2 -> "3:2"."""
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ConfigError(f"ratio of {a} and {b}: both sides must be positive and finite")
    r = max(a, b) / min(a, b)
    best: tuple[float, int, int] | None = None
    for s in range(1, max_small + 1):
        x = max(s, round(r * s))
        err = abs(x / s - r) / r
        if best is None or err < best[0] - 1e-12:
            best = (err, x, s)
        if err <= tol:
            break
    assert best is not None
    _, x, s = best
    g = math.gcd(x, s)
    x, s = x // g, s // g
    return f"{x}:{s}" if a >= b else f"{s}:{x}"


@dataclass(frozen=True)
class RatioResult:
    """N_p : N_d from per-GPU throughputs; GPU counts when a rate is given."""

    isl: float
    osl: float
    prefill_tps: float  # P, prompt tokens/s per GPU
    decode_tps: float  # D, output tokens/s per GPU at the target batch/TPOT
    rho: float
    prefill: float  # Tin / P: prefill GPU-seconds per request
    decode: float  # Tout / D: decode GPU-seconds per request
    ratio: float  # N_p / N_d
    ratio_str: str
    qps: float | None = None
    n_prefill_gpus: int | None = None  # ceil(lambda * Tin / (P * rho))
    n_decode_gpus: int | None = None  # ceil(lambda * Tout / (D * rho))
    notes: tuple[str, ...] = field(default=())


def check_pool(rate: float, size: float, what: str, option: str = "--qps") -> None:
    """Refuse a request rate whose pool (`size` GPUs or instances of `what`) passes MAX_POOL."""
    if size > MAX_POOL:
        raise ConfigError(
            f"{option} {rate:g} needs {size:.3g} {what}: more than {MAX_POOL:,}, 10x the "
            "largest GPU cluster built; give the request rate in requests per second"
        )


def _positive(**kw: float | None) -> None:
    for k, v in kw.items():
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise ConfigError(f"--{k.replace('_', '-')}={v} must be a positive number")


def ratio_from_numbers(
    isl: float,
    osl: float,
    prefill_tps: float,
    decode_tps: float,
    rho: float = DEFAULT_RHO,
    qps: float | None = None,
) -> RatioResult:
    """The seed's formula. A: (4000, 500, 8000, 2000) -> 0.5:0.25 = 2:1; B: (500, 2000) -> 1:16."""
    _positive(isl=isl, osl=osl, prefill_tps=prefill_tps, decode_tps=decode_tps, qps=qps)
    if not 0 < rho <= 1:
        raise ConfigError(f"--rho={rho} must be in (0, 1]")
    pre, dec = isl / prefill_tps, osl / decode_tps  # GPU-seconds per request
    notes = [
        f"prefill {isl:g} tok / {prefill_tps:g} tok/s/GPU = {pre:.4g} GPU-s per request; "
        f"decode {osl:g} tok / {decode_tps:g} tok/s/GPU = {dec:.4g} GPU-s per request"
    ]
    n_p = n_d = None
    if qps is not None:
        check_pool(qps, qps * max(pre, dec) / rho, "prefill or decode GPUs")
        # lambda*Tin/(P*rho) and lambda*Tout/(D*rho), whole GPUs; any positive rate needs
        # >= 1 GPU in each pool (the 1e-9 slack alone rounded a tiny rate down to 0 GPUs)
        n_p = max(1, math.ceil(qps * pre / rho - 1e-9))
        n_d = max(1, math.ceil(qps * dec / rho - 1e-9))
        notes.append(
            f"at {qps:g} QPS and rho={rho:g}: {qps * pre / rho:.2f} -> "
            f"{count(n_p, 'prefill GPU')}, {qps * dec / rho:.2f} -> {count(n_d, 'decode GPU')}"
        )
    return RatioResult(
        isl,
        osl,
        prefill_tps,
        decode_tps,
        rho,
        pre,
        dec,
        pre / dec,
        small_ratio(pre, dec),
        qps,
        n_p,
        n_d,
        tuple(notes),
    )


def decode_point(
    decode_step_fn: DecodeFn,
    tpot: float,
    ctx_per_seq: float,
    kv_capacity_tokens: float,
    max_batch: int = 4096,
    state_tokens_per_seq: float = 0.0,
    pool_per_seq: float | None = None,
) -> tuple[int, float, str]:
    """Largest batch whose step time meets `tpot` within KV capacity: (batch, step_s, limit).
    A sequence holds ctx_per_seq tokens (`pool_per_seq` KV-pool tokens when its window layers
    hold fewer: perf.memory.pool_tokens_per_seq) plus its fixed recurrent state (SSM /
    linear-attention layers) in KV-pool tokens (MemoryPlan.state_tokens_per_seq), tokens."""
    held = ctx_per_seq if pool_per_seq is None else pool_per_seq
    per_seq = max(held + state_tokens_per_seq, 1.0)  # KV-pool tokens per sequence
    kv_batch = int(kv_capacity_tokens // per_seq)
    if kv_batch < 1:
        state = (
            f" + {state_tokens_per_seq:,.0f} tokens' worth of recurrent state"
            if state_tokens_per_seq
            else ""
        )
        raise ConfigError(
            f"KV capacity {kv_capacity_tokens:.0f} tokens holds no sequence of "
            f"{ctx_per_seq:.0f} tokens{state} on the decode instance"
        )
    hi = min(kv_batch, max_batch)
    if decode_step_fn(1, ctx_per_seq) > tpot:
        return 1, decode_step_fn(1, ctx_per_seq), "tpot-infeasible"
    if decode_step_fn(hi, ctx_per_seq) <= tpot:
        return hi, decode_step_fn(hi, ctx_per_seq), "kv" if hi == kv_batch else "max-batch"
    lo = 1  # invariant: step(lo) <= tpot < step(hi); step time grows with the batch
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if decode_step_fn(mid, ctx_per_seq) <= tpot else (lo, mid)
    return lo, decode_step_fn(lo, ctx_per_seq), "tpot"


@dataclass(frozen=True)
class ModelRatio:
    """The ratio with P and D from a step model, in GPUs and in whole instances."""

    gpu: RatioResult  # per-GPU P, D and the GPU ratio (prefill/decode GPU-seconds)
    prefill_s: float  # E[p(I)]: instance-seconds per request on one prefill instance
    decode_batch: int  # largest batch meeting TPOT within KV capacity
    decode_step_s: float  # step time at that batch
    decode_limit: str  # what capped the batch: tpot, kv, max-batch, tpot-infeasible
    ctx_per_seq: float  # mean context of a decoding sequence (isl + osl/2)
    prefill_gpus: int  # GPUs per prefill instance
    decode_gpus: int  # GPUs per decode instance
    instance_ratio: float  # prefill instances per decode instance
    instance_ratio_str: str
    n_prefill_instances: int | None = None
    n_decode_instances: int | None = None
    lengths: LengthEffect | None = None
    notes: tuple[str, ...] = field(default=())
    prefill_alone_s: float | None = None  # E[seconds] of a prompt prefilled on an idle instance
    tpot_s: float = 0.0  # the TPOT target, seconds

    @property
    def feasible(self) -> bool:
        """False when no decode batch, not even one sequence, meets the TPOT target."""
        return self.decode_limit != "tpot-infeasible"


def infeasible_note(res: ModelRatio, where: str = "this decode instance") -> str | None:
    """The one-line statement that the TPOT SLO cannot be met on this decode instance."""
    if res.feasible:
        return None
    step, tpot = res.decode_step_s, res.tpot_s
    return (
        f"infeasible: no decode batch meets TPOT {tpot * 1e3:.1f} ms on {where}; "
        f"one sequence alone takes {step * 1e3:.1f} ms per token ({step / tpot:.1f}x the "
        "target), so the plan below runs at batch 1 and misses the SLO: use a wider decode "
        "layout, a faster GPU or a looser --tpot"
    )


def _prefill_seconds(
    fn: PrefillFn,
    alone_fn: PrefillFn | None,
    isl: float,
    lengths: np.ndarray | list[int] | None,
    counts: np.ndarray | list[float] | None,
) -> tuple[float, float, float | None, LengthEffect | None]:
    """(mean isl, E[p(I)], E[p_alone(I)] or None, Jensen effect or None)."""
    if lengths is None:
        n = max(1, round(isl))
        return isl, fn(n), None if alone_fn is None else alone_fn(n), None
    eff = prefill_by_distribution(fn, lengths, counts)
    alone = None if alone_fn is None else prefill_by_distribution(alone_fn, lengths, counts)
    return eff.mean_len, eff.mean_time, None if alone is None else alone.mean_time, eff


def ratio_from_model(
    prefill_time_fn: PrefillFn,
    decode_step_fn: DecodeFn,
    *,
    isl: float,
    osl: float,
    tpot: float,
    kv_capacity_tokens: float,
    prefill_gpus: int,
    decode_gpus: int,
    rho: float = DEFAULT_RHO,
    qps: float | None = None,
    isl_lengths: np.ndarray | list[int] | None = None,
    isl_counts: np.ndarray | list[float] | None = None,
    max_batch: int = 4096,
    prefill_alone_fn: PrefillFn | None = None,
    state_tokens_per_seq: float = 0.0,
    pool_tokens_fn: Callable[[float], float] | None = None,
) -> ModelRatio:
    """P from instance-seconds per prompt (mean over the length distribution when given),
    D at the largest batch meeting `tpot`; pools rounded to whole instances, each >= 1.
    `prefill_alone_fn` (a prompt on an idle instance) is only reported (prefill_alone_s).
    `state_tokens_per_seq`: a sequence's fixed recurrent state in KV-pool tokens (decode_point);
    `pool_tokens_fn`: KV-pool tokens a sequence of that context fills (window layers capped)."""
    _positive(isl=isl, osl=osl, tpot=tpot, qps=qps)
    pre = _prefill_seconds(prefill_time_fn, prefill_alone_fn, isl, isl_lengths, isl_counts)
    isl, pre_s, alone_s, lengths = pre
    ctx = isl + osl / 2.0  # mean context over a sequence's decode life (KV grows isl -> isl+osl)
    pool = None if pool_tokens_fn is None else pool_tokens_fn(ctx)
    b, step, limit = decode_point(
        decode_step_fn, tpot, ctx, kv_capacity_tokens, max_batch, state_tokens_per_seq, pool
    )
    p_tps = isl / (pre_s * prefill_gpus)  # tokens/s per GPU
    d_tps = b / (step * decode_gpus)  # one token per sequence per step
    g = ratio_from_numbers(isl, osl, p_tps, d_tps, rho, qps)
    inst = pre_s / (osl * step / b)  # instance-seconds per request, prefill vs decode
    n_p = n_d = None
    if qps is not None:
        n_p = max(1, math.ceil(qps * pre_s / rho - 1e-9))
        n_d = max(1, math.ceil(qps * osl * step / (b * rho) - 1e-9))
    notes = list(g.notes) + _model_notes(limit, b, step, tpot, lengths)
    if n_p is not None and n_d is not None:
        notes.append(f"whole instances: {n_p} prefill x {gpus(prefill_gpus)} = "
                     f"{n_p * prefill_gpus}, {n_d} decode x {gpus(decode_gpus)} = "
                     f"{n_d * decode_gpus}")  # fmt: skip
    return ModelRatio(
        g, pre_s, b, step, limit, ctx, prefill_gpus, decode_gpus, inst, small_ratio(inst, 1.0),
        n_p, n_d, lengths, tuple(notes), alone_s, tpot,
    )  # fmt: skip


def _model_notes(
    limit: str, b: int, step: float, tpot: float, lengths: LengthEffect | None
) -> list[str]:
    why = {
        "tpot": f"decode batch {b} is the largest with a step <= TPOT {tpot * 1e3:.0f} ms",
        "kv": f"decode batch {b} is capped by KV capacity (step {step * 1e3:.1f} ms < TPOT)",
        "max-batch": f"decode batch capped at {b} (engine max batch)",
        "tpot-infeasible": f"TPOT {tpot * 1e3:.1f} ms is below the batch-1 step "
        f"{step * 1e3:.1f} ms: no batch meets it; using batch 1",
    }
    out = [why[limit]]
    if lengths is not None:
        out.append(
            f"prefill from the length distribution ({lengths.requests:.0f} requests): "
            f"E[p(I)] = {lengths.mean_time * 1e3:.1f} ms vs p(E[I]) = "
            f"{lengths.time_of_mean * 1e3:.1f} ms at mean {lengths.mean_len:.0f} tokens; "
            f"the one-number answer is off by {lengths.error_pct:+.1f}%"
        )
    return out
