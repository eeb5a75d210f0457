"""Attention-DP rules of a step: a prompt stays on one rank; each rank schedules its own batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.perf.step import BatchShape

if TYPE_CHECKING:
    from pdplan.parallel.layout import Layout
    from pdplan.perf.efficiency import Efficiency

__all__ = ["EngineLimits", "busiest_rank_shape", "token_budgets"]


def busiest_rank_shape(shape: BatchShape, dp: int) -> BatchShape:
    """The attention-side shape, times dp, of the busiest of `dp` attention-DP ranks.

    A prompt is not split across DP ranks (each rank owns whole requests), so of n prefilling
    sequences the busiest rank holds ceil(n / dp), i.e. a share ceil(n/dp)/n of the step's
    prompt tokens and causal pairs (equal lengths assumed) instead of 1/dp. The costs divide
    the returned shape by dp, so its prefill part is scaled by ceil(n/dp) * dp / n (1 when the
    prompts balance); decodes are taken as balanced.
    """
    n = shape.prefill_seqs
    if dp <= 1 or n <= 0:
        return shape
    f = -(-n // dp) * dp / n
    if f == 1.0:
        return shape
    return BatchShape(
        round(shape.prefill_tokens * f),
        shape.prefill_pairs * f,
        n,
        shape.decode_seqs,
        shape.decode_ctx,
    )


def token_budgets(chunk: int, dp: int, per_rank: bool) -> tuple[int, int]:
    """(tokens one iteration of the instance may take, most tokens of one prompt per iteration)
    for an engine budget of `chunk` tokens over `dp` attention-DP ranks. Where each rank
    schedules its own batch up to the budget (per_rank: vLLM's engine core per DP rank,
    TensorRT-LLM's max_num_tokens per rank) the instance takes dp x chunk and a prompt chunk;
    where the budget is the instance's (SGLang: chunked_prefill_size // dp_size per rank,
    server_args.py) the instance takes chunk and a prompt chunk // dp."""
    dp = max(1, dp)
    if per_rank:
        return chunk * dp, chunk
    return chunk, max(1, chunk // dp)


class EngineLimits:
    """An engine's scheduler limits over an instance's attention-DP ranks (mixed into
    perf.CostModel, which sets `eff` and `layout`)."""

    eff: Efficiency
    layout: Layout

    @property
    def step_token_budget(self) -> int:
        """Prompt tokens one iteration of the whole instance may take (token_budgets)."""
        return token_budgets(
            int(self.eff.prefill_chunk), self.layout.dp, self.eff.chunk_per_dp_rank
        )[0]

    @property
    def prompt_token_budget(self) -> int:
        """Most tokens of one prompt in one iteration: one DP rank's budget (token_budgets)."""
        return token_budgets(
            int(self.eff.prefill_chunk), self.layout.dp, self.eff.chunk_per_dp_rank
        )[1]

    @property
    def max_running(self) -> int:
        """Most sequences the instance runs at once: eff.max_seqs per attention-DP rank (each
        rank's scheduler has its own limit)."""
        return int(self.eff.max_seqs) * self.layout.dp
