"""Steady-state TTFT / TPOT of a closed loop (C clients, fixed ISL/OSL), agg or disaggregated.

Aggregated: fixed-concurrency benchmarks with equal output lengths are not Poisson queues.
Requests prefilled in the same iteration finish together and return together, so the closed
loop settles into cohorts (chunked engines) or fully synchronised rounds (prefill-first
engines). The formulas below follow those cycles (see _agg_chunked, _agg_prefill_first);
throughput X = C / E2E with E2E = TTFT + (O-1) * TPOT (Little's law, design-notes s2).

Disaggregated: prefill and decode pools are separate queues; TTFT = prefill queue + prefill +
KV transfer + the first decode step (what a client sees through a PD proxy), TPOT = the decode
step at the decode pool's batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan.errors import ConfigError
from pdplan.perf.burst import first_round, prefill_burst
from pdplan.perf.closed_loop import MAX_UTIL, prefill_queue_ttft, slot_wait
from pdplan.perf.costmodel import CostModel
from pdplan.perf.step import BatchShape, causal_pairs

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


def _step_tokens(cm: CostModel) -> float:
    """Tokens a decode step emits: > 1 for a speculative cost model (perf.spec_decode), whose
    decode steps are priced per token."""
    return float(getattr(getattr(cm, "spec", None), "tokens_per_step", 1.0))


def _chunk_step(
    cm: CostModel, tokens: int, seqs: int, isl: int, decode_b: float, ctx: float, start: int = 0
) -> float:
    """Seconds of one iteration carrying `tokens` prompt tokens of `seqs` prompts (chunk
    starting at offset `start` of each prompt) alongside `decode_b` running decodes."""
    per_seq = tokens / max(seqs, 1)
    b = round(decode_b)
    shape = BatchShape(tokens, seqs * causal_pairs(int(per_seq), start), seqs, b, int(b * ctx))
    return cm.step_time(shape)


def _prefill_plan(isl: int, concurrency: int, budget: int) -> tuple[int, int]:
    """(cohort size k, iterations one cohort's prefill spans).

    In a closed loop with equal output lengths, requests that are prefilled in the same
    iteration also finish together and come back together, so they stay a cohort forever:
    k = as many prompts as fit in one token budget (>= 1); a prompt longer than the budget
    spans ceil(isl / budget) iterations.
    """
    if isl >= budget:
        return 1, math.ceil(isl / budget)
    return max(1, min(concurrency, budget // isl)), 1


def _agg_chunked(cm: CostModel, isl: int, osl: int, clients: int, ctx: float) -> tuple[float, ...]:
    """Chunked prefill mixed with decode (vLLM, TensorRT-LLM): cohorts of k prompts each take
    `steps` mixed iterations; a cycle lasts N = max(osl - 1 + steps, n_cohorts * steps)
    iterations, of which a share f carries a prefill chunk (the instance's prefill share).
    Speculative decoding (cm.spec) emits e tokens a decode iteration: a request decodes in
    (osl - 1) / e iterations, priced whole (cm.decode_step is per token: x e)."""
    e = _step_tokens(cm)
    dec = (osl - 1) / e  # decode iterations of one request
    batch = float(clients)
    for _ in range(3):  # the running decodes use part of each iteration's token budget
        budget = max(1, cm.step_token_budget - round(batch))
        if clients * isl <= cm.step_token_budget:  # one cohort: it returns to an idle engine
            budget = cm.step_token_budget
        k, steps = _prefill_plan(isl, clients, budget)
        n_cohorts = math.ceil(clients / k)
        n_steps = max(dec + steps, n_cohorts * steps)
        batch = clients * dec / n_steps  # mean running decodes per iteration
    f = n_cohorts * steps / n_steps  # share of iterations carrying prefill work
    g = _interleaved_share(n_cohorts, steps, n_steps)
    # decodes riding along a prefill iteration: the mean batch (real cohorts drift apart a
    # little, so other requests decode beside it), none for a single client: alone, its own
    # prompt is the whole iteration
    ride = batch if clients > 1 else 0.0
    t_dec = cm.decode_step(max(1, round(batch)), ctx) * e if osl > 1 else 0.0  # an iteration
    # a cohort's iterations: with three or more cohorts every one is full (the chain below:
    # the next cohort's prompt fills what a tail leaves); alone or with one other, the tail
    # chunk runs at its own size
    chunks = [min(k * isl, budget)] * steps
    if n_cohorts <= 2:
        chunks = [min(budget, k * isl - j * budget) for j in range(steps)]
    t_mix = (
        sum(_chunk_step(cm, c, k, isl, ride, ctx, start=j * budget) for j, c in enumerate(chunks))
        / steps
    )
    avg = t_dec + f * (t_mix - t_dec)
    tpot = (t_dec + g * (t_mix - t_dec)) / e if osl > 1 else t_dec / e  # per token
    ttft = _chunked_ttft(clients, n_cohorts, steps, round(n_steps - dec - steps), t_mix, avg)
    return ttft, tpot, batch, f, first_round(cm, isl, clients, ctx)


def _chunked_ttft(
    clients: int, n_cohorts: int, steps: int, wait_steps: int, t_mix: float, avg: float
) -> float:
    """Steady-state TTFT of a chunked engine's closed loop, s.

    Cohorts come back in the order their first tokens went out, and those were one prefill
    iteration apart (each iteration emits one cohort's first tokens; the decode steps between
    are shared by all), so a round's returns arrive chained: each cohort lands as the one
    before it starts its prefill and waits that iteration out. With n cohorts in the chain the
    mean wait is (n - 1) / n of an iteration on top of a cohort's own `steps` (the simulator's
    closed loop, Llama-3.1-70B TP4 H100, ISL / OSL 1024, C = 64: ~1.9 iterations; the even
    spread over the cycle assumed before gave 1.5 iterations, half the simulated TTFT). One or
    two cohorts do not chain: they land half an iteration into the decoding (C > 1) or find
    the engine idle (C = 1). A prefill-bound cycle adds its wait_steps of queueing.
    """
    land = 0.5 * avg if clients > 1 else 0.0  # a return lands mid-iteration
    ttft = steps * t_mix + wait_steps * avg + land
    if n_cohorts >= 3 and wait_steps == 0:
        ttft = max(ttft, (steps + (n_cohorts - 1) / n_cohorts) * t_mix)
    return ttft


def _interleaved_share(n_cohorts: int, steps: int, n_steps: float) -> float:
    """Share g of a request's osl - 1 decode iterations that carry another cohort's prefill.

    Closed loop, equal lengths: every client sends one request per cycle of N = n_steps
    iterations, so during one request's cycle each of the other C - k clients is prefilled
    exactly once (its k cohort mates share its own prefill iterations and never interleave):
    (n_cohorts - 1) * steps iterations in all, landing among the N - steps iterations outside
    its own prefill (its wait, then its osl - 1 decodes). Hence g = (n_cohorts - 1) * steps /
    (N - steps): 0 at C = 1 (nothing can interleave; TPOT = one decode step), 1 when prefill
    saturates the instance (then a wait exists and N = n_cohorts * steps).
    """
    free = n_steps - steps  # iterations: the request's wait + its osl - 1 decodes
    return (n_cohorts - 1) * steps / free if free > 0 else 0.0


def _agg_prefill_first(
    cm: CostModel, isl: int, osl: int, clients: int, ctx: float
) -> tuple[float, ...]:
    """Prefill-first (SGLang): all clients arrive together, are prefilled in ceil(C*I/budget)
    prefill-only batches while decoding waits, then decode in lockstep and finish together,
    so the rounds stay synchronised. TTFT = mean completion time of the prefill batches;
    TPOT = t_dec(C) + (prefill time a request waits after its first token) / (osl - 1)."""
    budget = max(1, cm.step_token_budget)
    per_batch = max(1, budget // isl) if isl < budget else 1
    done, clock, ttft_sum = 0, 0.0, 0.0
    while done < clients:
        n = min(per_batch, clients - done)
        clock += cm.prefill_time(isl, n)
        ttft_sum += clock * n
        done += n
    ttft = ttft_sum / clients
    t_dec = cm.decode_step(clients, ctx)
    tpot = t_dec + (clock - ttft) / (osl - 1) if osl > 1 else t_dec
    util = clock / (clock + (osl - 1) * t_dec)
    return ttft, tpot, float(clients), util, ttft


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
    run = _agg_chunked if chunked else _agg_prefill_first
    ttft, tpot, batch, util, first = run(cm, isl, osl, slots, ctx)
    # a benchmark of `rounds` x C requests starts with all C at once: its mean TTFT mixes one
    # start-up round with rounds - 1 steady ones
    ttft = _with_startup(first, ttft, rounds, cm.eff.bench_rounds) + cm.eff.ttft_overhead_s
    steps = min(cm.eff.ttft_decode_steps * _step_tokens(cm), osl - 1)  # in tokens' time
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
    slots = min(per_dec, decode_max_batch or per_dec)
    if decode_kv_capacity_tokens is not None:
        _require_one_fits(decode_kv_capacity_tokens, isl + osl, "decode instance")
        slots = min(slots, decode_kv_capacity_tokens // (isl + osl))
    t_dec = decode.decode_step(max(1, math.ceil(slots)), ctx)
    occupancy = osl * t_dec  # s, a decode slot is held from the first decode step to the last
    s_wait = slot_wait(math.ceil(per_dec), math.ceil(slots), occupancy)
    step1 = t_dec * _step_tokens(decode)  # s, the first decode step, whole (speculative: x E)
    fixed = kv_transfer_s + step1  # s, after the prompt: transfer + hand-off + first step
    ttft, util = prefill_queue_ttft(p1, p_batch, fixed, concurrency, n_prefill, osl, t_dec, s_wait)
    # prefill-bound: the pool sustains x_cap = n_prefill / p requests/s; the clients queue for
    # it, so by Little's law a cycle lasts C / x_cap, and the decode pool runs only
    # x_cap * occupancy requests (not every client) per instance
    x_cap = max(1, n_prefill) / p_batch  # req/s
    if concurrency / (ttft + (osl - 1) * t_dec + s_wait) > MAX_UTIL * x_cap:
        for _ in range(3):
            busy = min(slots, x_cap * osl * t_dec / max(1, n_decode))
            t_dec = decode.decode_step(max(1, math.ceil(busy)), ctx)
        ttft, slots, s_wait = concurrency / x_cap - (osl - 1) * t_dec, busy, 0.0
        occupancy, util = osl * t_dec, 1.0
    ttft = _with_startup(first + kv_transfer_s + step1, ttft, rounds, prefill.eff.bench_rounds)
    late = min(decode.eff.ttft_decode_steps * _step_tokens(decode), osl - 1)  # in tokens' time
    ttft += prefill.eff.ttft_overhead_s + late * t_dec
    ttft += s_wait
    e2e = ttft + (osl - 1) * t_dec
    x = min(concurrency / e2e, x_cap)  # the start-up round's shorter wait does not add capacity
    tpot, batch = t_dec, slots  # decode steps are costed with every slot running
    if osl == 1:  # one output token: no inter-token gap; a slot is held for one step only
        tpot, batch = 0.0, min(slots, x * occupancy / max(1, n_decode))  # Little's law
    return Estimate(ttft, tpot, e2e, x, batch, util, slots < per_dec, "disagg")
