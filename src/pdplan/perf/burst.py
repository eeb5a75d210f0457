"""The start-up burst of a fixed-concurrency benchmark: all C prompts at once (estimate.py)."""

from __future__ import annotations

from pdplan.perf.costmodel import CostModel
from pdplan.perf.step import BatchShape, causal_pairs

__all__ = ["MAX_BURST_STEPS", "first_round", "prefill_burst"]

MAX_BURST_STEPS = 512  # start-up iterations priced one by one (later ones repeat the last)


def first_round(cm: CostModel, isl: int, clients: int, ctx: float) -> float:
    """Mean TTFT of the start-up round: all C prompts arrive at once and are packed in order,
    the C prompts laid end to end, into iterations of the token budget less the decodes riding
    in them (the prompts finished so far; vLLM / TensorRT-LLM count decode tokens in the
    budget); each piece attends to its prompt's earlier tokens, and prompt j's first token
    comes at the end of the iteration holding its last token. Past MAX_BURST_STEPS
    iterations each is priced as the last one computed."""
    budget = max(1, cm.step_token_budget)
    total = clients * isl
    done_at: list[float] = []  # completion time of each prompt, s
    clock, t_it, pos, steps = 0.0, 0.0, 0, 0
    while pos < total:
        decodes = len(done_at)
        hi = min(total, pos + max(1, budget - decodes))
        if steps < MAX_BURST_STEPS:
            t_it = cm.step_time(_burst_shape(pos, hi, isl, decodes, ctx))
        clock, pos, steps = clock + t_it, hi, steps + 1
        while len(done_at) < clients and (len(done_at) + 1) * isl <= hi:
            done_at.append(clock)
    return sum(done_at) / clients


def _burst_shape(lo: int, hi: int, isl: int, decodes: int, ctx: float) -> BatchShape:
    """Iteration carrying tokens [lo, hi) of prompts laid end to end (isl tokens each) beside
    `decodes` decoding sequences at context ~ctx."""
    pairs, seqs, t = 0.0, 0, lo
    while t < hi:
        start = t % isl  # offset of this piece inside its prompt
        n = min(hi - t, isl - start)
        pairs += causal_pairs(n, start)
        seqs += 1
        t += n
    return BatchShape(hi - lo, pairs, seqs, decodes, int(decodes * ctx))


def prefill_burst(cm: CostModel, isl: int, n: int) -> float:
    """Mean TTFT (prefill part) of n prompts arriving at once at a prefill instance, as the
    simulator runs them: the first arrival starts a step of its own (an idle scheduler steps
    on the first request it sees; the rest of the burst lands during that step), then the
    prompts are laid end to end in steps of the token budget, the last piece of a step cut to
    fit (SGLang's chunked prefill, the engines' budget on a prefill instance); a prompt is
    done at the end of the step holding its last token. Past MAX_BURST_STEPS steps each is
    priced as the last one computed."""
    budget = max(1, cm.step_token_budget)
    total = n * isl
    done = 0
    clock = t_it = 0.0
    pos, steps, hi = 0, 0, min(isl, budget)  # the first step: the first prompt alone
    acc = 0.0
    while pos < total:
        if steps < MAX_BURST_STEPS:
            t_it = cm.step_time(_burst_shape(pos, hi, isl, 0, 0.0))
        clock, pos, steps = clock + t_it, hi, steps + 1
        while done < n and (done + 1) * isl <= hi:
            done += 1
            acc += clock
        hi = min(total, pos + budget)
    return acc / n
