"""Black-box pass 16, simulator: a speculative decode instance's ITL keeps TPOT's mean when
its requests join from a prefill instance (disaggregated), not only from mixed steps."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, simulate_closed_loop


@dataclass(frozen=True)
class DraftingStep(LinearStepModel):
    """A linear step model priced per accepted token that emits `spec.tokens_per_step`
    tokens a step (as perf.spec_decode.SpecCostModel does)."""

    spec: Any = None


# s per step: base, per prompt token, per context token (tests/sim/test_sim_spec_burst.py's)
STEP = dict(base_s=0.004, per_token_s=2e-5, per_ctx_s=1e-8)


@pytest.mark.parametrize("exact", [False, True])
def test_pd_spec_decode_itl_mean_is_tpots(exact: bool) -> None:
    # a join's first token ends a whole speculative step (2.5 tokens); the 1.5 tokens that
    # come with it are no gaps. They were counted as per-token gaps: with 16-token outputs
    # ITL's mean ran 15 / (16 - 2.5) = 1.11 x TPOT's, where the docs say it is TPOT's.
    model = DraftingStep(**STEP, spec=SimpleNamespace(tokens_per_step=2.5))
    pd = [
        InstanceSpec("prefill", LinearStepModel(**STEP), max_batch=64),
        InstanceSpec("decode", model, max_batch=64),
    ]
    s = simulate_closed_loop(pd, 512, 16, 8, n_requests=120, warmup=8, exact=exact)
    assert s["itl_s"]["mean"] == pytest.approx(s["tpot_s"]["mean"], rel=0.01)
    assert s["itl_s"]["p50"] == 0.0  # most tokens still come with their step's first
