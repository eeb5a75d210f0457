"""MoE communication follows the engines' default backends: all-reduce under TP attention,
gather / reduce-scatter under DP attention, all-to-all only for EP wider than a server."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf import moe_parallel as lc
from pdplan.perf.collectives import Links
from pdplan.perf.costmodel import CostModel
from pdplan.perf.hardware import ACT
from pdplan.perf.step import BatchShape


def _links(gpu: str = "h100_sxm") -> Links:
    g = get_gpu(gpu)
    return Links.for_gpu(g, CostModel(get_model("deepseek-v3"), g, Layout(tp=8)).eff, 8)


def test_tp_attention_ep_costs_the_tp_all_reduce() -> None:
    m, links = get_model("deepseek-v3"), _links()
    t = 8192.0
    ep = lc.moe_comm(m, t, Layout(tp=8, ep=8), links)
    # one ring all-reduce of T x hidden over the 8 TP ranks, nothing else (no dispatch)
    assert ep == pytest.approx(links.all_reduce(t * 7168 * ACT, 8))
    assert ep == pytest.approx(lc.moe_comm(m, t, Layout(tp=8), links))


def test_dp_attention_gathers_then_all_to_all_only_when_wide() -> None:
    m, links = get_model("deepseek-v3"), _links()
    t = 8192.0
    dp4 = lc.moe_comm(m, t, Layout(tp=1, dp=4, ep=4), links)
    # allgather + reducescatter of T x hidden (not top-8 copies of T/4 tokens each way)
    assert dp4 == pytest.approx(2 * links.all_gather(t * 7168 * ACT, 4))
    dp16 = lc.moe_comm(m, t, Layout(tp=1, dp=16, ep=16), links)
    send = t / 16 * 8 * 7168 * ACT * 15 / 16  # top-8 copies of T/16 tokens, 15/16 off-GPU
    assert dp16 == pytest.approx(2 * links.all_to_all(send, 16))


def test_ep_without_dp_prefills_no_slower_than_tp_on_minimax() -> None:
    # vLLM TP4 + EP4 on H100 (no DP): before, a dispatch + combine all-to-all was charged on
    # top of the all-reduce, doubling the communication of a prefill step
    m, g = get_model("MiniMaxAI/MiniMax-M2.5"), get_gpu("h100_sxm")
    shape = BatchShape(8192, 8 * 1024 * 1025 / 2, 8, 0, 0)
    tp = CostModel(m, g, Layout(tp=4), "vllm").breakdown(shape)
    ep = CostModel(m, g, Layout(tp=4, ep=4), "vllm").breakdown(shape)
    assert ep.comm == pytest.approx(tp.comm)


def _monte_carlo_busiest(experts: int, k: int, tokens: int, ep: int) -> tuple[float, float]:
    """Mean over trials of the busiest rank's (distinct experts, token-expert pairs)."""
    import numpy as np

    rng = np.random.default_rng(0)
    per = experts // ep
    touched, pairs = [], []
    for _ in range(2000):
        picks = np.argsort(rng.random((tokens, experts)), axis=1)[
            :, :k
        ].ravel()  # top-k, no repeats
        rank = picks // per
        pairs.append(np.bincount(rank, minlength=ep).max())
        distinct = np.unique(picks) // per
        touched.append(np.bincount(distinct, minlength=ep).max())
    return float(np.mean(touched)), float(np.mean(pairs))


@pytest.mark.parametrize(("tokens", "ep"), [(1, 8), (4, 8), (16, 4), (64, 8)])
def test_busiest_ep_rank_matches_uniform_routing(tokens: int, ep: int) -> None:
    touched, pairs = lc.busiest_ep_rank(256, 8, tokens, ep)
    mc_touched, mc_pairs = _monte_carlo_busiest(256, 8, tokens, ep)
    assert touched == pytest.approx(mc_touched, rel=0.1)
    assert pairs == pytest.approx(mc_pairs, rel=0.1)


def test_busiest_ep_rank_limits() -> None:
    # one rank: the mean; many tokens: every local expert touched, pairs near the mean
    assert lc.busiest_ep_rank(256, 8, 4, 1) == pytest.approx((256 * (1 - (1 - 8 / 256) ** 4), 32))
    touched, pairs = lc.busiest_ep_rank(256, 8, 8192, 8)
    assert touched == 32 and pairs == pytest.approx(8192, rel=0.02)
    # at decode sizes EP's busiest rank reads well above the mean rank's experts
    assert lc.busiest_ep_rank(256, 8, 4, 8)[0] > 1.5 * 32 * (1 - (1 - 8 / 256) ** 4)
