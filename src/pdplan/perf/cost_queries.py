"""Whole-request questions a CostModel answers from its step times: prefill and decode
seconds, and throughput per GPU (a mixin: CostModel's hot step_time stays in costmodel.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.perf.prefill import chunked_prefill_time
from pdplan.perf.step import BatchShape

if TYPE_CHECKING:
    from pdplan.parallel.layout import Layout

__all__ = ["CostQueries"]


class CostQueries:
    """prefill_time, decode_step and the throughputs built on them (CostModel's base)."""

    __slots__ = ()

    if TYPE_CHECKING:  # CostModel's (EngineLimits': the budgets)
        layout: Layout

        @property
        def step_token_budget(self) -> int: ...
        @property
        def prompt_token_budget(self) -> int: ...
        def step_time(self, shape: BatchShape) -> float: ...
        def decode_affine(self, batch: int, ctx: float | None = None) -> tuple[float, float]: ...

    def prefill_time(self, isl: int, batch: int = 1, cached: int = 0) -> float:
        """Seconds to prefill `batch` prompts of `isl` new tokens each, in chunks of the
        engine's token budget (each chunk one iteration)."""
        return chunked_prefill_time(
            self, self.step_token_budget, isl, batch, cached, self.prompt_token_budget
        )

    def decode_step(self, batch: int, ctx_per_seq: float) -> float:
        """Seconds of one decode iteration of `batch` sequences of mean context `ctx_per_seq`."""
        return self.step_time(BatchShape(decode_seqs=batch, decode_ctx=int(batch * ctx_per_seq)))

    def prefill_request_s(self, isl: int) -> float:
        """Instance seconds per prompt of `isl` tokens when prompts keep it busy: each
        attention-DP rank prefills its own prompt side by side, so dp prompts share a step
        (prefill_time(isl, dp) / dp; prefill_time(isl) without DP)."""
        dp = self.layout.dp
        return self.prefill_time(isl, dp) / dp

    def prefill_tps_per_gpu(self, isl: int, batch: int | None = None) -> float:
        """Prefill throughput per GPU at prompt length `isl`, tokens/s (`batch` prompts at a
        time; default one per attention-DP rank)."""
        b = batch or self.layout.dp
        return b * isl / self.prefill_time(isl, b) / self.layout.gpus

    def decode_tps_per_gpu(self, batch: int, ctx_per_seq: float) -> float:
        """Decode throughput per GPU, tokens/s: batch tokens per step / step time / GPUs."""
        return batch / self.decode_step(batch, ctx_per_seq) / self.layout.gpus
