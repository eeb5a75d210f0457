"""The cycles of an aggregated closed loop (C clients, equal lengths): chunked engines' cohorts
and prefill-first engines' synchronised rounds (perf/estimate.py's aggregated steady state)."""

from __future__ import annotations

import math

from pdplan.perf.burst import first_round
from pdplan.perf.costmodel import CostModel
from pdplan.perf.step import BatchShape, causal_pairs

__all__ = ["agg_chunked", "agg_prefill_first", "interleaved_share", "step_tokens"]


def step_tokens(cm: CostModel) -> float:
    """Tokens a decode step emits: > 1 for a speculative cost model (perf.spec_decode), whose
    decode steps are priced per token."""
    return float(getattr(getattr(cm, "spec", None), "tokens_per_step", 1.0))


def chunk_step(
    cm: CostModel, tokens: int, seqs: int, isl: int, decode_b: float, ctx: float, start: int = 0
) -> float:
    """Seconds of one iteration carrying `tokens` prompt tokens of `seqs` prompts (chunk
    starting at offset `start` of each prompt) alongside `decode_b` running decodes."""
    per_seq = tokens / max(seqs, 1)
    b = round(decode_b)
    shape = BatchShape(tokens, seqs * causal_pairs(int(per_seq), start), seqs, b, int(b * ctx))
    return cm.step_time(shape)


def prefill_plan(isl: int, concurrency: int, budget: int) -> tuple[int, int]:
    """(cohort size k, iterations one cohort's prefill spans).

    In a closed loop with equal output lengths, requests that are prefilled in the same
    iteration also finish together and come back together, so they stay a cohort forever:
    k = as many prompts as fit in one token budget (>= 1); a prompt longer than the budget
    spans ceil(isl / budget) iterations.
    """
    if isl >= budget:
        return 1, math.ceil(isl / budget)
    return max(1, min(concurrency, budget // isl)), 1


def agg_chunked(cm: CostModel, isl: int, osl: int, clients: int, ctx: float) -> tuple[float, ...]:
    """Chunked prefill mixed with decode (vLLM, TensorRT-LLM): cohorts of k prompts each take
    `steps` mixed iterations; a cycle lasts N = max(osl - 1 + steps, n_cohorts * steps)
    iterations, of which a share f carries a prefill chunk (the instance's prefill share).
    Speculative decoding (cm.spec) emits e tokens a decode iteration: a request decodes in
    (osl - 1) / e iterations, priced whole (cm.decode_step is per token: x e)."""
    e = step_tokens(cm)
    dec = (osl - 1) / e  # decode iterations of one request
    batch = float(clients)
    for _ in range(3):  # the running decodes use part of each iteration's token budget
        budget = max(1, cm.step_token_budget - round(batch))
        if clients * isl <= cm.step_token_budget:  # one cohort: it returns to an idle engine
            budget = cm.step_token_budget
        k, steps = prefill_plan(isl, clients, budget)
        n_cohorts = math.ceil(clients / k)
        n_steps = max(dec + steps, n_cohorts * steps)
        batch = clients * dec / n_steps  # mean running decodes per iteration
    f = n_cohorts * steps / n_steps  # share of iterations carrying prefill work
    g = interleaved_share(n_cohorts, steps, n_steps)
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
        sum(chunk_step(cm, c, k, isl, ride, ctx, start=j * budget) for j, c in enumerate(chunks))
        / steps
    )
    avg = t_dec + f * (t_mix - t_dec)
    tpot = (t_dec + g * (t_mix - t_dec)) / e if osl > 1 else t_dec / e  # per token
    ttft = chunked_ttft(clients, n_cohorts, steps, round(n_steps - dec - steps), t_mix, avg)
    return ttft, tpot, batch, f, first_round(cm, isl, clients, ctx)


def chunked_ttft(
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


def interleaved_share(n_cohorts: int, steps: int, n_steps: float) -> float:
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


def agg_prefill_first(
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
