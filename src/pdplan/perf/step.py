"""The step-time interface the simulator and planner use: one engine iteration -> seconds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from pdplan.errors import ConfigError

__all__ = ["BatchShape", "LinearStepModel", "StepModel", "causal_pairs"]


def causal_pairs(new_tokens: int, cached_tokens: int = 0) -> float:
    """Query-key pairs of causal attention for `new_tokens` after `cached_tokens` of context.

    Token j (0-based) of the chunk attends to cached + j + 1 keys, so the sum is
    new*cached + new*(new+1)/2 (the causal "halving" of the n^2 score matrix).
    """
    return new_tokens * cached_tokens + new_tokens * (new_tokens + 1) / 2.0


class BatchShape(NamedTuple):
    """What one engine iteration computes (per instance, before any parallel split). A named
    tuple: the simulator builds one per prompt step, and a tuple is built ~3x faster than a
    frozen dataclass.

    prefill_tokens: new prompt tokens computed this step (sum over prefilling sequences).
    prefill_pairs:  sum of causal_pairs(new_i, cached_i) over prefilling sequences.
    prefill_seqs:   number of sequences with prompt tokens in this step.
    decode_seqs:    sequences generating one token each this step.
    decode_ctx:     sum of the context lengths (KV tokens read) of the decoding sequences.
    """

    prefill_tokens: int = 0
    prefill_pairs: float = 0.0
    prefill_seqs: int = 0
    decode_seqs: int = 0
    decode_ctx: int = 0

    @property
    def tokens(self) -> int:
        return self.prefill_tokens + self.decode_seqs


@runtime_checkable
class StepModel(Protocol):
    """Anything that times one iteration of one instance. Must be cheap: the simulator calls it
    on every event. `decode_affine(b)` gives (a, c) with step_time = a + c * decode_ctx for a
    pure-decode batch of b sequences, which event-skipping integrates in closed form. A
    model with a `decode_kink` > 0 (perf.CostModel with a DSA top-k) is asked with the
    batch's context too, `decode_affine(b, ctx)`, for the side of the kink ctx is on."""

    def step_time(self, shape: BatchShape) -> float: ...

    def decode_affine(self, batch: int, ctx: float | None = None) -> tuple[float, float]: ...


@dataclass(frozen=True)
class LinearStepModel:
    """A transparent analytic step model for tests and what-ifs (not hardware-derived):

    t = base_s + per_token_s * tokens + per_pair_s * prefill_pairs + per_ctx_s * decode_ctx
        + per_seq_s * decode_seqs
    """

    base_s: float = 0.01
    per_token_s: float = 0.0
    per_pair_s: float = 0.0
    per_ctx_s: float = 0.0
    per_seq_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("base_s", "per_token_s", "per_pair_s", "per_ctx_s", "per_seq_s"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < math.inf):
                raise ConfigError(f"LinearStepModel {name}={v!r} must be a finite number >= 0 s")

    def step_time(self, shape: BatchShape) -> float:
        return (
            self.base_s
            + self.per_token_s * shape.tokens
            + self.per_pair_s * shape.prefill_pairs
            + self.per_ctx_s * shape.decode_ctx
            + self.per_seq_s * shape.decode_seqs
        )

    def decode_affine(self, batch: int, ctx: float | None = None) -> tuple[float, float]:
        return (self.base_s + (self.per_token_s + self.per_seq_s) * batch, self.per_ctx_s)
