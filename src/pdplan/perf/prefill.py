"""Prefill time of prompts cut into chunks of an engine's per-iteration token budget."""

from __future__ import annotations

from functools import lru_cache

from pdplan.perf.step import BatchShape, StepModel, causal_pairs

__all__ = ["chunked_prefill_time"]


def chunked_prefill_time(
    model: StepModel,
    budget: int,
    isl: int,
    batch: int = 1,
    cached: int = 0,
    prompt_budget: int | None = None,
) -> float:
    """Seconds to prefill `batch` prompts of `isl` new tokens (after `cached` reused ones),
    each iteration taking at most `budget` tokens and at most `prompt_budget` (default
    `budget`; one attention-DP rank's share) of any one prompt: short prompts share an
    iteration, a long one runs in ceil(isl / prompt_budget) chunks, each attending to
    everything before it."""
    budget = max(1, int(budget))
    chunk = max(1, int(prompt_budget or budget))
    total_tokens = isl * batch
    if total_tokens <= budget and isl <= chunk:
        pairs = batch * causal_pairs(isl, cached)
        return model.step_time(BatchShape(total_tokens, pairs, batch))
    # whole prompts per step, or long prompts chunked side by side (one per DP rank's budget)
    per_step = max(1, budget // max(isl, 1)) if isl <= chunk else max(1, budget // chunk)
    t = 0.0
    done = 0
    while done < batch:
        n = min(per_step, batch - done)
        if isl <= chunk:
            t += model.step_time(BatchShape(n * isl, n * causal_pairs(isl, cached), n))
        else:
            t += _chunked(model, isl, cached, chunk, n)
        done += n
    return t


@lru_cache(maxsize=4096)
def _chunk_starts(isl: int, budget: int) -> tuple[int, ...]:
    return tuple(range(0, isl, budget))


def _chunked(model: StepModel, isl: int, cached: int, budget: int, lanes: int = 1) -> float:
    """`lanes` prompts of `isl` tokens, each cut into chunks of `budget`, advancing together."""
    t = 0.0
    for start in _chunk_starts(isl, budget):
        n = min(budget, isl - start)
        t += model.step_time(BatchShape(lanes * n, lanes * causal_pairs(n, cached + start), lanes))
    return t
