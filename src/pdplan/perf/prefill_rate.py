"""Prefill cost per prompt on a loaded prefill instance: prompts packed up to the token budget.

A prefill instance with a queue does not prefill prompts one at a time: each iteration takes
waiting prompts up to the engine's token budget (vLLM max_num_batched_tokens, SGLang
chunked_prefill_size: CostModel.step_token_budget), so short prompts share one step's
weights read. With pipeline parallelism the engine keeps pp such batches in flight, one per
stage (vLLM V1 EngineCore.step_with_batch_queue: a batch queue of
max_concurrent_batches = pipeline_parallel_size scheduler outputs, each scheduled with its
own token budget; perf/pp.py: micro-batches hold whole prompts). This sizes the prefill pool
in `pdplan ratio`. perf.estimate.estimate_disagg packs prompts to the budget the same way but
keeps one batch in flight (no pp batches): using this there moved its disaggregated rows'
TTFT median from 40.2 to 41.3 %, so it was left as is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from pdplan.perf.step import BatchShape, causal_pairs

if TYPE_CHECKING:
    from pdplan.perf.costmodel import CostModel

__all__ = ["LoadedPrefill", "loaded_prefill", "loaded_prefill_fn"]


@dataclass(frozen=True)
class LoadedPrefill:
    """One prompt length on a busy prefill instance."""

    isl: int  # prompt tokens
    prompts: int  # prompts in flight together (per-batch packing x pp batches)
    per_batch: int  # prompts packed into one budget-sized batch
    per_prompt_s: float  # instance-seconds per prompt when loaded (time / prompts)
    alone_s: float  # seconds to prefill one prompt on an idle instance (no batching)

    def tps_per_gpu(self, gpus: int) -> float:
        """Loaded prefill throughput, prompt tokens/s per GPU."""
        return self.isl / (self.per_prompt_s * gpus)


def loaded_prefill(cm: CostModel, isl: int) -> LoadedPrefill:
    """Instance-seconds per prompt of `isl` tokens when waiting prompts keep `cm` busy.

    Prompts up to one DP rank's prompt budget are packed b = budget // isl to a batch (the
    weights-read floor of a step is shared by b prompts); longer prompts run in chunks, one
    prompt per DP rank's budget side by side (perf/prefill.py). pp batches are in flight at
    once (module doc). Prompts in flight are capped at the engine's max running sequences.
    """
    isl = max(1, int(isl))
    budget, chunk = max(1, cm.step_token_budget), max(1, cm.prompt_token_budget)
    whole = isl <= chunk
    per_batch = max(1, budget // isl) if whole else max(1, budget // chunk)
    lanes = max(1, min(per_batch * cm.layout.pp, cm.max_running))
    if whole:
        t = cm.step_time(BatchShape(lanes * isl, lanes * causal_pairs(isl), lanes))
    else:
        t = 0.0
        for start in range(0, isl, chunk):  # each chunk attends to the chunks before it
            n = min(chunk, isl - start)
            t += cm.step_time(BatchShape(lanes * n, lanes * causal_pairs(n, start), lanes))
    return LoadedPrefill(isl, lanes, min(per_batch, lanes), t / lanes, cm.prefill_time(isl, 1))


def loaded_prefill_fn(cm: CostModel) -> Callable[[int], LoadedPrefill]:
    """loaded_prefill(cm, isl) as a function of isl, memoised per prompt length."""
    return lru_cache(maxsize=None)(lambda isl: loaded_prefill(cm, isl))
