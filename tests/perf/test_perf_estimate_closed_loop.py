"""Closed-loop estimate: which prefills interleave with a request's decode, and PP prefill."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.agg_cycles import interleaved_share
from pdplan.perf.costmodel import CostModel
from pdplan.perf.estimate import estimate_agg
from pdplan.perf.step import BatchShape, causal_pairs


def _cm(layout: Layout) -> CostModel:
    return CostModel(get_model("llama-3.1-70b"), get_gpu("h100-sxm"), layout, "vllm")


@pytest.mark.parametrize("osl", [2, 10, 500])
def test_single_client_tpot_is_one_decode_step_at_any_osl(osl: int) -> None:
    cm = _cm(Layout(tp=4))
    est = estimate_agg(cm, 8000, osl, 1)
    # one client: no other prompt can land among its decode steps, and it finds the engine
    # idle when it sends the next request (no half-iteration wait, nothing riding along)
    assert est.tpot_s == pytest.approx(cm.decode_step(1, 8000 + osl / 2.0), rel=1e-9)
    assert est.ttft_s == pytest.approx(cm.prefill_time(8000, 1) + cm.eff.ttft_overhead_s)


def test_interleaved_share_counts_only_the_other_cohorts() -> None:
    assert interleaved_share(1, 1, 10) == 0.0  # C = 1 (or one cohort): nothing interleaves
    assert interleaved_share(1, 3, 12) == 0.0  # a long prompt's own chunks do not count
    # 4 one-prompt cohorts, osl 10: N = 10; the other 3 prompts land among its 9 decodes
    assert interleaved_share(4, 1, 10) == pytest.approx(3 / 9)
    # prefill-bound (N = n_cohorts * steps, a wait exists): every other iteration is a prefill
    assert interleaved_share(32, 1, 32) == pytest.approx(1.0)


def test_tpot_spreads_only_other_clients_prefill_over_the_decode_steps() -> None:
    cm = _cm(Layout(tp=4))
    est = estimate_agg(cm, 8000, 10, 4)
    # 4 clients, one 8000-token prompt per iteration: a cycle of N = 9 + 1 = 10 iterations
    # with a mean of 4 x 9 / 10 -> 4 decodes; the other 3 prompts land among its 9 decodes
    t_dec = cm.decode_step(4, 8005)
    t_mix = cm.step_time(BatchShape(8000, causal_pairs(8000), 1, 4, 4 * 8005))
    assert est.tpot_s == pytest.approx(t_dec + 3 / 9 * (t_mix - t_dec), rel=1e-9)
    assert est.prefill_util == pytest.approx(4 / 10)  # its own prompt counts for utilisation


def test_pipeline_stages_do_not_split_a_lone_prompt() -> None:
    tp4, pp2 = _cm(Layout(tp=4)), _cm(Layout(tp=4, pp=2))
    # one 8000-token prompt (beside one running decode): it cannot be cut across micro-batches,
    # so it crosses all layers as without PP (+ the stage hand-off)
    shape = BatchShape(8000, causal_pairs(8000), 1, 1, 8000)
    assert pp2.step_time(shape) == pytest.approx(tp4.step_time(shape), rel=0.03)
    one_pp = estimate_agg(pp2, 8000, 500, 1)
    assert one_pp.ttft_s == pytest.approx(estimate_agg(tp4, 8000, 500, 1).ttft_s, rel=0.03)
    # two prompts do fill two micro-batches, one prompt each, in flight together
    two = BatchShape(16000, 2 * causal_pairs(8000), 2)
    assert pp2.step_time(two) == pytest.approx(
        tp4.step_time(shape._replace(decode_seqs=0)), rel=0.03
    )
