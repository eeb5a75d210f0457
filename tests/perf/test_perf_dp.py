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


def test_long_prompts_on_dp_ranks_are_chunked_side_by_side() -> None:
    from pdplan.perf.prefill import chunked_prefill_time
    from pdplan.perf.step import LinearStepModel

    step = LinearStepModel(base_s=0.01, per_token_s=0.001)
    # SGLang-style DP8: the instance takes 8192 tokens a step, one prompt 1024 of them
    t = chunked_prefill_time(step, 8192, 4000, batch=8, prompt_budget=1024)
    # 8 prompts advance together: 4 steps of 8 x 1024 / 8 x 928 tokens, not 32 single chunks
    chunks = [1024, 1024, 1024, 928]
    assert t == pytest.approx(sum(0.01 + 0.001 * 8 * c for c in chunks))


def test_prefill_request_time_counts_every_dp_rank() -> None:
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel

    m, g = get_model("deepseek-v3"), get_gpu("h200")
    dp = CostModel(m, g, Layout(dp=8, ep=8, moe_tp=1), "sglang")
    assert dp.prefill_request_s(4000) == pytest.approx(dp.prefill_time(4000, 8) / 8)
    assert dp.prefill_request_s(4000) < dp.prefill_time(4000) / 4  # ranks work side by side
    tp = CostModel(m, g, Layout(tp=8, ep=8, moe_tp=1), "sglang")
    assert tp.prefill_request_s(4000) == tp.prefill_time(4000)
    assert dp.prefill_tps_per_gpu(4000) == pytest.approx(4000 / dp.prefill_request_s(4000) / 8)
