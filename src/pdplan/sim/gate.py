"""Context gates: a scheduler holding new prompts back while decodes run (TensorRT-LLM)."""

from __future__ import annotations

from dataclasses import dataclass

from pdplan.errors import ConfigError

__all__ = ["GATE_KINDS", "ContextGate", "gate_rank"]

GATE_KINDS = ("balance", "batch")


@dataclass(frozen=True)
class ContextGate:
    """How an aggregated instance holds newly arrived prompts back while decodes run.

    kind "balance": TensorRT-LLM attention-DP balancing (`attention_dp_config:
        enable_balance: true`, PyExecutor._balance_adp_requests): prompts are scheduled only
        once each of `ranks` DP ranks holds one (then after `wait_steps` more iterations,
        `batching_wait_iters`), or when the iteration counter, reset at each release, reaches
        `timeout_steps` (`timeout_iters`), or when a rank runs no decode. TensorRT-LLM's
        defaults: timeout 50, batching wait 10 (llmapi AttentionDpConfig). A release takes in
        every waiting prompt (TensorRT-LLM's ranks then take them within their token budgets).
    kind "batch": TensorRT-LLM batch waiting without attention DP (`batch_wait_timeout_iters`,
        `batch_wait_max_tokens_ratio`, PyExecutor._waiting_requests): while decodes run,
        prompts wait until their tokens plus the decodes' reach `tokens` (ratio x
        max_num_tokens) or `timeout_steps` iterations have passed since the first waited.
    An arrival's DP rank is a fixed hash of its request index (gate_rank): TensorRT-LLM gives a
    new request to the rank with the fewest active requests, the one where a request just
    finished, and in a closed loop those are spread at random over the ranks.
    """

    kind: str
    timeout_steps: int
    ranks: int = 1
    wait_steps: int = 0
    tokens: int = 0

    def __post_init__(self) -> None:
        if self.kind not in GATE_KINDS:
            raise ConfigError(f"context gate kind {self.kind!r}; expected one of {GATE_KINDS}")
        for name, least in (("timeout_steps", 1), ("ranks", 1), ("wait_steps", 0)):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= least):
                raise ConfigError(f"context gate {name}={v!r} must be an integer >= {least}")
        if not (isinstance(self.tokens, int) and not isinstance(self.tokens, bool)):
            raise ConfigError(f"context gate tokens={self.tokens!r} must be an integer >= 0")
        least = 1 if self.kind == "batch" else 0  # batch: ratio x max_num_tokens > 0
        if self.tokens < least:
            raise ConfigError(f"context gate tokens={self.tokens!r} must be an integer >= {least}")


def gate_rank(rid: int, ranks: int) -> int:
    """The DP rank request `rid` lands on: Knuth's multiplicative hash, uniform over ranks."""
    return ((rid * 2654435761) & 0xFFFFFFFF) * ranks >> 32
