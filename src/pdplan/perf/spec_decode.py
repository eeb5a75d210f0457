"""Speculative decoding (MTP, EAGLE heads): step times when each decode step drafts k tokens
and the target model verifies them in one pass, priced per accepted token."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from pdplan.errors import ConfigError
from pdplan.perf import layer_costs as lc
from pdplan.perf.costmodel import CostModel
from pdplan.perf.step import BatchShape

__all__ = [
    "DEFAULT_ACCEPTANCE",
    "SPEC_METHODS",
    "SpecCostModel",
    "SpecDecode",
    "parse_spec",
    "tokens_per_step",
]

# Draft heads the engines run inside the target's step (no separate draft model):
#   mtp:   DeepSeek-V3 multi-token-prediction module, one decoder layer (MoE in DeepSeek) on the
#          target's last hidden state + the shared LM head, applied k times (SGLang
#          --speculative-algorithm EAGLE with the nextn weights, TensorRT-LLM MTP
#          num_nextn_predict_layers, vLLM --speculative-config method deepseek_mtp);
#   eagle: an EAGLE / EAGLE-3 head, one dense decoder layer + LM head (Li et al. 2024).
SPEC_METHODS = ("mtp", "eagle")

# Per-draft acceptance when nothing better is known: DeepSeek-R1's MTP accepts 2.50 tokens per
# step on random prompts with the chat template (InferenceX PR #649, 2026-02-05; about its
# MT-Bench figure), with k = 3 drafts; 1 + a + a^2 + a^3 = 2.50 gives a = 0.70.
DEFAULT_ACCEPTANCE = 0.70


def tokens_per_step(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens a sequence emits per verification step with `draft_tokens` drafts, each
    accepted with probability `acceptance` while all before it were (i.i.d. positions):
    (1 - a^(k+1)) / (1 - a), the bonus token included (Leviathan et al. 2023, eq. 1)."""
    a, k = acceptance, draft_tokens
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True)
class SpecDecode:
    """A speculative-decoding setup: `draft_tokens` (k) drafted per step by a head of
    `draft_layers` decoder layers, each accepted with probability `acceptance` (0-1; engines
    log the mean accepted length instead: tokens_per_step gives it)."""

    method: str = "mtp"
    draft_tokens: int = 1
    acceptance: float = DEFAULT_ACCEPTANCE
    draft_layers: int = 1

    def __post_init__(self) -> None:
        if self.method not in SPEC_METHODS:
            raise ConfigError(
                f"unknown speculative method {self.method!r}; known: {', '.join(SPEC_METHODS)}"
            )
        if not 1 <= self.draft_tokens <= 16:
            raise ConfigError(f"draft_tokens={self.draft_tokens} must be in 1..16")
        if not 0.0 <= self.acceptance <= 1.0:
            raise ConfigError(f"acceptance={self.acceptance} must be a probability in [0, 1]")
        if self.draft_layers < 1:
            raise ConfigError(f"draft_layers={self.draft_layers} must be >= 1")

    @property
    def tokens_per_step(self) -> float:
        return tokens_per_step(self.acceptance, self.draft_tokens)

    def to_dict(self) -> dict[str, Any]:
        """JSON of the setup and the tokens a step it accepts on average."""
        return {
            "method": self.method,
            "draft_tokens": self.draft_tokens,
            "acceptance": self.acceptance,
            "draft_layers": self.draft_layers,
            "tokens_per_step": round(self.tokens_per_step, 4),
        }


# METHOD:K[:ACCEPTANCE], blanks around the parts allowed, ASCII digits only
_SPEC_TEXT = re.compile(r"\s*([a-z]+)\s*:\s*(\d+)\s*(?::\s*([0-9.]+(?:e-?\d+)?)\s*)?", re.ASCII)


def parse_spec(text: str) -> SpecDecode | None:
    """'METHOD:K[:ACCEPTANCE]' (e.g. 'mtp:3', 'eagle:2:0.8') -> SpecDecode; '', 'none' -> None.
    Raises ConfigError naming what is wrong."""
    t = text.strip().lower()
    if t in ("", "none", "off"):
        return None
    m = _SPEC_TEXT.fullmatch(t)
    if m is None:
        raise ConfigError(
            f"speculative decoding {text!r}: expected METHOD:DRAFT_TOKENS[:ACCEPTANCE], "
            "e.g. mtp:3 or eagle:2:0.8 (draft tokens a whole number, acceptance in [0, 1])"
        )
    try:
        acc = float(m.group(3)) if m.group(3) else DEFAULT_ACCEPTANCE
    except ValueError:
        raise ConfigError(
            f"speculative decoding {text!r}: acceptance {m.group(3)!r} is not a number"
        ) from None
    try:
        return SpecDecode(m.group(1), int(m.group(2)), acc)
    except ConfigError as e:  # say which text was refused: 'mtp:0' -> draft tokens 0
        raise ConfigError(f"speculative decoding {text!r}: {e}") from None


class SpecCostModel(CostModel):
    """CostModel of an engine that decodes speculatively. The simulator advances a decoding
    sequence one token per step, so a pure decode step is priced per accepted token:
    (verify + k x draft) / tokens_per_step, where verify is the target's step over k + 1
    query tokens per sequence (GEMM rows and logits x (k + 1), the KV read once) and a draft
    pass is draft_layers of the target's per-layer decode time plus the LM head. Verification
    attention reads each sequence's KV once for its k + 1 queries: k + 1 times the FLOPs per
    context token, the same bytes (full-attention layers; other mixers are priced as one
    query). A step with prompt tokens is priced whole (verify + drafts; the head also runs
    over the prompt: + its layers' share): the simulator gives its decodes tokens_per_step
    tokens (sim.mixed), the steady-state estimate counts decode iterations, not tokens."""

    def __init__(self, *args: Any, spec: SpecDecode, **kw: Any) -> None:
        super().__init__(*args, **kw)
        if spec.method == "mtp" and not self.model.num_mtp_layers:
            raise ConfigError(
                f"{self.model.name} ships no MTP layers (num_nextn_predict_layers is 0 in its "
                "config): speculate with an EAGLE head instead (--spec-decode eagle:K)"
            )
        self.spec = spec
        self._draft_share = spec.draft_layers / max(1, self.model.num_layers)
        # decode attention per context token with k + 1 queries: FLOPs (k + 1)x, KV bytes 1x
        hw_q = replace(self._hw, attn_flops=self._hw.attn_flops / (spec.draft_tokens + 1))
        ctx_q = sum(
            c * lc.attn_coeffs(self.model, kind, self.layout, self.eff, hw_q)[1]
            for kind, c, _ in self._attn
        )
        self._extra_ctx_s = max(0.0, ctx_q - self._ctx_s) if self._simple_attn else 0.0

    def step_time(self, shape: BatchShape) -> float:
        b = shape.decode_seqs
        if b <= 0:  # prompt-only step: the draft head runs over the prompt too
            return CostModel.step_time(self, shape) * (1.0 + self._draft_share)
        k = self.spec.draft_tokens
        verify = CostModel.step_time(self, shape._replace(decode_seqs=b * (k + 1)))
        verify += shape.decode_ctx / self._grp * self._extra_ctx_s
        drafts = k * self._draft_pass(b, shape.decode_ctx)
        if shape.prefill_tokens:
            return verify + drafts
        return (verify + drafts) / self.spec.tokens_per_step

    def _draft_pass(self, batch: int, ctx: int) -> float:
        """Seconds of one draft-head pass over `batch` sequences: its layers' share of a plain
        decode step's layer time (kernel latencies included) plus the LM head's logits."""
        plain = CostModel.step_time(self, BatchShape(decode_seqs=batch, decode_ctx=ctx))
        lm = self._lm_head(batch)
        host = self._host_s(batch, 0)
        layers = max(0.0, plain - lm - host - self.eff.step_s)
        return layers * self._draft_share + lm
