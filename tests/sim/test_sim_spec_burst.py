"""Speculative decoding in the simulator: steps priced per token, ITL as whole-step bursts."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, simulate_closed_loop


@dataclass(frozen=True)
class DraftingStep(LinearStepModel):
    """A linear step model priced per accepted token, as perf.spec_decode.SpecCostModel is,
    that says it emits `spec.tokens_per_step` tokens a step."""

    spec: Any = None


E = 2.5
STEP = dict(base_s=0.004, per_token_s=2e-5, per_ctx_s=1e-8)


def _run(model: LinearStepModel, exact: bool = False, role: str = "agg") -> dict:
    inst = [InstanceSpec(role, model, max_batch=64, chunk_budget=None)]
    return simulate_closed_loop(inst, 512, 200, 8, n_requests=160, warmup=8, exact=exact)


def test_itl_is_whole_step_bursts() -> None:
    plain = _run(LinearStepModel(**STEP))
    burst = _run(DraftingStep(**STEP, spec=SimpleNamespace(tokens_per_step=E)))
    # same per-token pricing: TPOT and the mean gap agree with the plain run's
    assert burst["tpot_s"]["mean"] == pytest.approx(plain["tpot_s"]["mean"], rel=1e-6)
    assert burst["itl_s"]["mean"] == pytest.approx(burst["tpot_s"]["mean"], rel=1e-3)
    # but tokens come E at a time: most gaps are ~0 and the tail is a whole step
    assert burst["itl_s"]["p50"] < 0.05 * plain["itl_s"]["p50"]
    # exactly 0, as the docs say: a linear bin from 0 s read the zeros as a few microseconds
    assert burst["itl_s"]["p50"] == 0.0
    step = plain["itl_s"]["p90"] * E
    assert burst["itl_s"]["p90"] == pytest.approx(step, rel=0.05)


def test_bursts_agree_with_exact_mode() -> None:
    model = DraftingStep(**STEP, spec=SimpleNamespace(tokens_per_step=E))
    skip, exact = _run(model), _run(model, exact=True)
    for key in ("mean", "p90", "p99"):
        assert skip["itl_s"][key] == pytest.approx(exact["itl_s"][key], rel=0.01)
    assert skip["tpot_s"]["p50"] == pytest.approx(exact["tpot_s"]["p50"], rel=0.01)


def test_mixed_steps_give_decodes_a_whole_steps_tokens() -> None:
    # a chunked engine under heavy prefill: most steps carry prompt chunks, priced whole,
    # so each decode must get the step's tokens_per_step tokens from them, not one
    def run(e: float) -> dict:
        model = DraftingStep(**STEP, spec=SimpleNamespace(tokens_per_step=e))
        inst = [InstanceSpec("agg", model, max_batch=64, chunk_budget=256)]
        return simulate_closed_loop(inst, 2048, 64, 32, n_requests=320, warmup=32)

    one, three = run(1.0), run(3.0)
    assert three["tpot_s"]["mean"] < 0.6 * one["tpot_s"]["mean"]
    assert three["itl_s"]["mean"] == pytest.approx(three["tpot_s"]["mean"], rel=0.02)


def test_first_token_ends_a_whole_step_and_late_steps_are_whole() -> None:
    # disaggregated: a request's first token comes from its first decode step, which a
    # speculative decode instance runs whole (its burst arrives together at the end)
    def run(e: float, late_steps: float = 0.0) -> dict:
        plain = LinearStepModel(**STEP)
        model = DraftingStep(**STEP, spec=SimpleNamespace(tokens_per_step=e))
        inst = [InstanceSpec("prefill", plain, node=0), InstanceSpec("decode", model, node=1)]
        return simulate_closed_loop(
            inst, 512, 200, 8, n_requests=160, warmup=8, ttft_decode_steps=late_steps
        )

    one, burst = run(1.0), run(E)
    step = one["tpot_s"]["p50"]  # a per-token step at this batch, s
    extra = burst["ttft_s"]["mean"] - one["ttft_s"]["mean"]
    assert 0.5 * (E - 1) * step < extra < 1.5 * (E - 1) * step
    # an engine's first token reaching the client decode steps late: whole steps
    late = run(E, 10.0)["ttft_s"]["mean"] - burst["ttft_s"]["mean"]
    assert late == pytest.approx(10 * E * burst["tpot_s"]["p50"], rel=0.05)
