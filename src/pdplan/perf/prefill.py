"""Prefill time of prompts cut into chunks of an engine's per-iteration token budget."""

from __future__ import annotations

from functools import lru_cache

from pdplan.perf.step import BatchShape, StepModel, causal_pairs

__all__ = ["chunked_prefill_time"]


def chunked_prefill_time(
    model: StepModel, budget: int, isl: int, batch: int = 1, cached: int = 0
) -> float:
    """Seconds to prefill `batch` prompts of `isl` new tokens (after `cached` reused ones),
    each iteration taking at most `budget` tokens: short prompts share an iteration, a long
    one runs in ceil(isl / budget) chunks, each attending to everything before it."""
    budget = max(1, int(budget))
    total_tokens = isl * batch
    if total_tokens <= budget:
        pairs = batch * causal_pairs(isl, cached)
        return model.step_time(BatchShape(total_tokens, pairs, batch))
    per_seq = max(1, budget // max(isl, 1))  # prompts per iteration when they fit whole
    t = 0.0
    done = 0
    while done < batch:
        n = min(per_seq, batch - done)
        if isl <= budget:
            t += model.step_time(BatchShape(n * isl, n * causal_pairs(isl, cached), n))
        else:
            t += _chunked_one(model, isl, cached, budget)
        done += n
    return t


@lru_cache(maxsize=4096)
def _chunk_starts(isl: int, budget: int) -> tuple[int, ...]:
    return tuple(range(0, isl, budget))


def _chunked_one(model: StepModel, isl: int, cached: int, budget: int) -> float:
    t = 0.0
    for start in _chunk_starts(isl, budget):
        n = min(budget, isl - start)
        t += model.step_time(BatchShape(n, causal_pairs(n, cached + start), 1))
    return t
