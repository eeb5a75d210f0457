"""Attention-DP step rules: busiest rank of a step, token budgets per engine semantics."""

from __future__ import annotations

import pytest

from pdplan.perf.dp import busiest_rank_shape, token_budgets
from pdplan.perf.step import BatchShape


def test_a_prompt_stays_on_one_rank() -> None:
    one = BatchShape(1000, 500_000.0, 1, 64, 64_000.0)
    busy = busiest_rank_shape(one, 8)
    # one prompt on one of 8 ranks: x dp of its tokens and pairs, decodes unchanged
    assert (busy.prefill_tokens, busy.prefill_pairs) == (8000, pytest.approx(4_000_000.0))
    assert (busy.decode_seqs, busy.decode_ctx) == (64, 64_000.0)
    eight = BatchShape(8000, 4_000_000.0, 8, 0, 0.0)
    assert busiest_rank_shape(eight, 8) is eight  # one prompt per rank: balanced
    nine = busiest_rank_shape(BatchShape(9000, 0.0, 9, 0, 0.0), 8)
    assert nine.prefill_tokens == 16000  # ceil(9 / 8) = 2 prompts on the busiest rank, x 8
    assert busiest_rank_shape(one, 1) is one


@pytest.mark.parametrize(
    ("per_rank", "want"),
    [(True, (65536, 8192)), (False, (8192, 1024))],
)
def test_token_budgets(per_rank: bool, want: tuple[int, int]) -> None:
    assert token_budgets(8192, 8, per_rank) == want
    assert token_budgets(8192, 1, per_rank) == (8192, 8192)
