"""Steady-state TTFT / TPOT of a closed loop (C clients, fixed ISL/OSL), agg or disaggregated.

Aggregated: fixed-concurrency benchmarks with equal output lengths are not Poisson queues.
Requests prefilled in the same iteration finish together and return together, so the closed
loop settles into cohorts (chunked engines) or fully synchronised rounds (prefill-first
engines). The formulas below follow those cycles (see agg_chunked, agg_prefill_first);
throughput X = C / E2E with E2E = TTFT + (O-1) * TPOT (Little's law, design-notes s2).

Disaggregated: prefill and decode pools are separate queues; TTFT = prefill queue + prefill +
KV transfer + the first decode step (what a client sees through a PD proxy), TPOT = the decode
step at the decode pool's batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan.errors import ConfigError
from pdplan.perf.agg_cycles import agg_chunked, agg_prefill_first, step_tokens
from pdplan.perf.burst import prefill_burst
from pdplan.perf.closed_loop import MAX_UTIL, prefill_queue_ttft, slot_wait
from pdplan.perf.costmodel import CostModel

__all__ = ["Estimate", "estimate_agg", "estimate_disagg"]


@dataclass(frozen=True)
class Estimate:
    """Steady-state prediction for one closed-loop setup (times in seconds)."""

    ttft_s: float
    tpot_s: float
    e2e_s: float
    throughput_rps: float  # completed requests per second (whole deployment)
    decode_batch: float  # mean running decode batch per instance
    prefill_util: float  # fraction of time the (prefill) instance spends on prefill
    kv_limited: bool  # True when KV capacity, not the client count, bounds the batch
    mode: str

    def to_dict(self) -> dict[str, float | bool | str]:
        return {
            "mode": self.mode,
            "ttft_ms": self.ttft_s * 1e3,
            "tpot_ms": self.tpot_s * 1e3,
            "e2e_s": self.e2e_s,
            "throughput_rps": self.throughput_rps,
            "decode_batch": self.decode_batch,
            "prefill_util": self.prefill_util,
            "kv_limited": self.kv_limited,
        }


def estimate_agg(
    cm: CostModel,
    isl: int,
    osl: int,
    concurrency: int,
    *,
    kv_capacity_tokens: int | None = None,
    max_batch: int | None = None,
    chunked: bool | None = None,
    rounds: float | None = None,
) -> Estimate:
    """Steady state of one aggregated instance serving `concurrency` closed-loop clients.

    When KV capacity or max_batch admits only `slots` < C requests at once, the other
    clients queue for a slot: by Little's law the extra wait is (C - slots) * E2E / slots.
    """
    chunked = cm.eff.chunked if chunked is None else chunked
    slots = min(concurrency, max_batch or concurrency)
    kv_limited = False
    if kv_capacity_tokens is not None:
        _require_one_fits(kv_capacity_tokens, isl + osl, "instance")
        fit = kv_capacity_tokens // (isl + osl)
        kv_limited = fit < slots
        slots = min(slots, fit)
    ctx = isl + osl / 2.0  # mean context of a running request
    run = agg_chunked if chunked else agg_prefill_first
    ttft, tpot, batch, util, first = run(cm, isl, osl, slots, ctx)
    # a benchmark of `rounds` x C requests starts with all C at once: its mean TTFT mixes one
    # start-up round with rounds - 1 steady ones
    ttft = _with_startup(first, ttft, rounds, cm.eff.bench_rounds) + cm.eff.ttft_overhead_s
    steps = min(cm.eff.ttft_decode_steps * step_tokens(cm), osl - 1)  # in tokens' time
    ttft += steps * tpot  # s, decode steps late, never past the last token
    ttft += slot_wait(concurrency, slots, ttft + (osl - 1) * tpot)
    e2e = ttft + (osl - 1) * tpot
    return Estimate(ttft, tpot, e2e, concurrency / e2e, batch, util, kv_limited, "agg")


def _with_startup(first: float, steady: float, rounds: float | None, default: float) -> float:
    """Mean TTFT, s, of `rounds` x C requests (None: `default`): one start-up round, rounds - 1
    steady ones; rounds = inf is the pure steady state (the limit, not inf / inf)."""
    r = default if rounds is None else rounds
    if math.isnan(r):
        raise ConfigError("--rounds must be a number >= 1 (inf: pure steady state), not nan")
    r = max(1.0, r)
    return steady if math.isinf(r) else (first + (r - 1.0) * steady) / r


def _require_one_fits(capacity_tokens: int, request_tokens: int, where: str) -> None:
    """A request whose ISL + OSL exceeds the KV pool can never run (engines refuse it)."""
    if capacity_tokens < request_tokens:
        raise ConfigError(
            f"KV capacity {capacity_tokens:,} tokens per {where} holds no request of "
            f"ISL + OSL = {request_tokens:,} tokens (short by {request_tokens - capacity_tokens:,})"
            ": more GPUs per instance, FP8 KV or shorter requests"
        )


def _decode_slots(per_dec: float, max_batch: int | None, kv_tokens: int | None, need: int) -> float:
    """Requests one decode instance holds at once: its share of the clients, capped by its
    max batch and by how many requests of `need` tokens (ISL + OSL) its KV pool holds."""
    slots = min(per_dec, max_batch or per_dec)
    if kv_tokens is not None:
        _require_one_fits(kv_tokens, need, "decode instance")
        slots = min(slots, kv_tokens // need)
    return slots


def _prefill_bound_decode(
    decode: CostModel, slots: float, x_cap: float, osl: int, ctx: float, n_decode: int
) -> tuple[float, float]:
    """(busy slots, decode step s) when the prefill pool's x_cap req/s bounds the loop: each
    decode instance then runs x_cap * osl * t_dec / n_decode requests (Little's law), and the
    step time at that batch is found by fixed-point iteration (3 rounds settle it)."""
    t_dec = decode.decode_step(max(1, math.ceil(slots)), ctx)
    busy = slots
    for _ in range(3):
        busy = min(slots, x_cap * osl * t_dec / max(1, n_decode))
        t_dec = decode.decode_step(max(1, math.ceil(busy)), ctx)
    return busy, t_dec


def estimate_disagg(
    prefill: CostModel,
    decode: CostModel,
    isl: int,
    osl: int,
    concurrency: int,
    *,
    n_prefill: int = 1,
    n_decode: int = 1,
    kv_transfer_s: float = 0.0,
    decode_kv_capacity_tokens: int | None = None,
    decode_max_batch: int | None = None,
    rounds: float | None = None,
) -> Estimate:
    """Steady state of n_prefill prefill and n_decode decode instances under C clients.

    Prefill instances batch waiting prompts up to their token budget. In the start-up round
    all C prompts queue at once (C / n_prefill per instance, mean wait half the backlog); in
    steady state arrivals are spread by the decode pool, so the prefill queue is M/D/1-like
    with utilisation u = X * p / n_prefill. TTFT adds the KV transfer and the first decode step
    (a PD proxy streams the first token from the decode side) and the engine's PD hand-off
    (Efficiency.pd_handoff_s: proxy round trip, connector notice, decode-side poll). When the
    decode pool holds fewer requests than the clients (KV capacity, or `decode_max_batch`
    sequences per instance), the rest wait for a slot, which a request holds for its decode
    steps: by Little's law (C - slots) * occupancy / slots, added once.
    """
    kv_transfer_s += decode.eff.pd_handoff_s  # s, KV bytes over the link + hand-off
    ctx = isl + osl / 2.0
    p1 = prefill.prefill_time(isl, 1)
    budget = max(1, prefill.step_token_budget)
    per_batch = max(1, budget // isl) if isl < budget else 1
    per_prefill = math.ceil(concurrency / max(1, n_prefill))
    first = prefill_burst(prefill, isl, per_prefill)
    p_batch = prefill.prefill_time(isl, min(per_batch, per_prefill)) / min(per_batch, per_prefill)
    per_dec = concurrency / max(1, n_decode)
    slots = _decode_slots(per_dec, decode_max_batch, decode_kv_capacity_tokens, isl + osl)
    t_dec = decode.decode_step(max(1, math.ceil(slots)), ctx)
    occupancy = osl * t_dec  # s, a decode slot is held from the first decode step to the last
    s_wait = slot_wait(math.ceil(per_dec), math.ceil(slots), occupancy)
    step1 = t_dec * step_tokens(decode)  # s, the first decode step, whole (speculative: x E)
    fixed = kv_transfer_s + step1  # s, after the prompt: transfer + hand-off + first step
    ttft, util = prefill_queue_ttft(p1, p_batch, fixed, concurrency, n_prefill, osl, t_dec, s_wait)
    # prefill-bound: the pool sustains x_cap = n_prefill / p requests/s; the clients queue for
    # it, so by Little's law a cycle lasts C / x_cap, and the decode pool runs only
    # x_cap * occupancy requests (not every client) per instance
    x_cap = max(1, n_prefill) / p_batch  # req/s
    if concurrency / (ttft + (osl - 1) * t_dec + s_wait) > MAX_UTIL * x_cap:
        slots, t_dec = _prefill_bound_decode(decode, slots, x_cap, osl, ctx, n_decode)
        ttft, s_wait = concurrency / x_cap - (osl - 1) * t_dec, 0.0
        occupancy, util = osl * t_dec, 1.0
    ttft = _with_startup(first + kv_transfer_s + step1, ttft, rounds, prefill.eff.bench_rounds)
    late = min(decode.eff.ttft_decode_steps * step_tokens(decode), osl - 1)  # in tokens' time
    ttft += prefill.eff.ttft_overhead_s + late * t_dec
    ttft += s_wait
    e2e = ttft + (osl - 1) * t_dec
    x = min(concurrency / e2e, x_cap)  # the start-up round's shorter wait does not add capacity
    tpot, batch = t_dec, slots  # decode steps are costed with every slot running
    if osl == 1:  # one output token: no inter-token gap; a slot is held for one step only
        tpot, batch = 0.0, min(slots, x * occupancy / max(1, n_decode))  # Little's law
    return Estimate(ttft, tpot, e2e, x, batch, util, slots < per_dec, "disagg")
