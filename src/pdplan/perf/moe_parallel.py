"""MoE under expert parallelism: the busiest EP rank's work and the collectives around a layer."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.comm import wide_ep
from pdplan.parallel.layout import Layout
from pdplan.perf.collectives import Links
from pdplan.perf.hardware import ACT

__all__ = ["busiest_ep_rank", "expected_max_normal", "moe_comm"]


@lru_cache(maxsize=256)
def expected_max_normal(n: int) -> float:
    """E[max of n iid standard normals] (Blom's approximation: the (n - 0.375) / (n + 0.25)
    quantile; 0.56 for n = 2, 1.03 for 4, 1.42 for 8, exact within ~1 %)."""
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def busiest_ep_rank(experts: int, top_k: int, tokens: float, ep: int) -> tuple[float, float]:
    """(distinct experts touched, token-expert pairs) on the busiest of `ep` EP ranks for one
    step of `tokens` tokens, uniform routing; the step waits for that rank.

    # expert e touched with p = 1 - (1 - k/E)^T; a rank holds E/ep experts: touched ~
    #   Binomial(E/ep, p), pairs ~ Binomial(T k, 1/ep) (uniform routing)
    # busiest of ep ranks: mean + E[max of ep normals] x sd (order statistics, normal approx.),
    #   touched capped at E/ep. At decode (small T) few experts are touched and their count
    #   varies most: EP8 of 256 experts at T = 4 reads ~1.7x the mean rank's weights.
    """
    e_local = experts / ep
    p = 1.0 - (1.0 - top_k / experts) ** tokens
    touched, assign = e_local * p, tokens * top_k / ep
    if ep > 1:
        z = expected_max_normal(ep)
        touched = min(e_local, touched + z * math.sqrt(e_local * p * (1.0 - p)))
        assign += z * math.sqrt(assign * (1.0 - 1.0 / ep))
    return touched, assign


def moe_comm(model: ModelSpec, tokens: float, lay: Layout, links: Links) -> float:
    """Collectives around a MoE layer (per layer, one step), as the engines' default MoE
    communication runs them. An all-to-all (dispatch + combine of top-k copies) is used only
    for wide EP, an EP group larger than one server and than the router's top-k (wide_ep):
    DeepEP / MNNVL kernels, which vLLM (--all2all-backend deepep_*), SGLang (--moe-a2a-backend
    deepep) and TensorRT-LLM (MNNVL / DeepEP alltoall, with attention DP) switch on for it.
    Otherwise:
    - TP attention (dp = 1): every TP rank holds the step's tokens, computes its experts' (EP)
      or its slice's (expert TP) share, and one all-reduce of T x h sums them, as for a TP
      FFN (vLLM FusedMoEParallelConfig.use_all2all_kernels = dp_size > 1 and use_ep).
    - DP attention: the dp groups' tokens are all-gathered before the experts and
      reduce-scattered after (vLLM's default all2all_backend "allgather_reducescatter";
      TensorRT-LLM's allgather / reducescatter without MNNVL), then all-reduced over TP.
    """
    m = model.moe
    assert m is not None
    h = m.expert_dim(model.hidden_size)  # a latent MoE moves latent-wide tokens
    width = lay.tp * lay.dp * lay.cp
    if wide_ep(lay, links.node or links.domain, m.experts_per_token):  # all-to-all kernels
        # each GPU sends its T/width tokens' top-k copies, (ep-1)/ep of them off-GPU
        send = tokens / width * m.experts_per_token * h * ACT * (lay.ep - 1) / lay.ep
        t = 2 * links.all_to_all(send, lay.ep)
        if lay.etp > 1:  # expert TP inside an EP group: its partial sums, all-reduced
            t += links.all_reduce(tokens / lay.dp * h * ACT, lay.etp)
        return t
    t = 0.0
    if lay.dp > 1:  # gather + reduce-scatter of all the stage's T x h x ACT B over the dp groups
        t += 2 * links.all_gather(tokens * h * ACT, lay.dp)
    # ring all-reduce of one group's T/dp x h x ACT B over its TP ranks (collectives.py)
    return t + links.all_reduce(tokens / lay.dp * h * ACT, lay.tp)
