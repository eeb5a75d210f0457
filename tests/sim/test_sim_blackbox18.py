"""Black-box pass 18: hand-checkable physics of disaggregated and heterogeneous runs."""

from __future__ import annotations

from collections import Counter

import numpy as np

from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import AGG, DECODE, PREFILL


def _spaced(n: int, gap_s: float = 10.0) -> Workload:
    """n short requests gap_s apart: each finds every instance idle (all loads tie)."""
    times = np.arange(n, dtype=float) * gap_s
    return Workload(np.full(n, 100, np.int32), np.full(n, 4, np.int32), times)


def test_local_pairing_rotates_ties_over_each_nodes_decode_instances() -> None:
    # 2 nodes, each one prefill and two decode instances (--placement mixed of 2P+4D). Prompts
    # alternate P0, P1; every decode instance is idle, so --pairing local's least-loaded choice
    # ties. The rotating start was one counter for both nodes: P0 always read it even, P1 odd,
    # so node 0's first and node 1's second decode instance took every request, the others none.
    ps = [InstanceSpec("prefill", PREFILL, node=n, gpus=2) for n in (0, 1)]
    ds = [InstanceSpec("decode", DECODE, node=n, gpus=2) for n in (0, 0, 1, 1)]
    cfg = SimConfig(instances=(*ps, *ds), routing="round_robin", pairing="local")
    res = simulate(cfg, _spaced(16))
    d_inst = res.columns["d_inst"]
    p_inst = res.columns["p_inst"]
    assert Counter(p_inst.tolist()) == {0: 8, 1: 8}
    # local: each request stays on its prefill's node (P0 -> 2, 3; P1 -> 4, 5) ...
    assert all((d in (2, 3)) == (p == 0) for p, d in zip(p_inst, d_inst, strict=True))
    # ... and the node's idle decode instances take turns
    assert Counter(d_inst.tolist()) == {2: 4, 3: 4, 4: 4, 5: 4}


def test_a_request_only_the_larger_decode_pool_holds_is_paired_there_not_dropped() -> None:
    # '1P:tp4+1D:tp4@a100-40gb+1D:tp4' of llama-3.1-70b: 11,759 vs 483,618 tokens of KV. A
    # 20,000-token request fits the second decode instance, yet the drop limit was the
    # smallest decode pool, so every such request was dropped ("exceed the KV capacity of
    # one decode instance ... (11,759 tokens)") while the prefill side already took the
    # largest ("prompt exceeds every prefill instance's KV capacity")
    p = InstanceSpec("prefill", PREFILL, node=0, kv_capacity_tokens=500_000)
    small = InstanceSpec("decode", DECODE, node=1, kv_capacity_tokens=11_759)
    big = InstanceSpec("decode", DECODE, node=2, kv_capacity_tokens=483_618)
    wl = Workload(np.full(4, 20_000, np.int32), np.full(4, 10, np.int32), np.arange(4) * 10.0)
    res = simulate(SimConfig(instances=(p, small, big)), wl)
    s = res.summary()
    assert (s["finished"], s["dropped"]) == (4, 0), s["drop_reasons"]
    assert set(res.columns["d_inst"].tolist()) == {2}  # the only one with room for it
    # past the largest pool too: dropped, naming every pool short and the largest's size
    long = Workload(np.array([490_000], np.int32), np.array([10], np.int32), np.zeros(1))
    s = simulate(SimConfig(instances=(p, small, big)), long).summary()
    (why,) = s["drop_reasons"]
    assert "every decode instance" in why and "483,618 tokens" in why


def test_an_agg_request_goes_to_the_agg_instance_whose_kv_holds_prompt_and_output() -> None:
    # 'tp4@a100-40gb+tp4': the prompt fits the small instance, prompt + output only the
    # large one; with the limit now the largest pool the router must pick by the whole need
    small = InstanceSpec("agg", AGG, kv_capacity_tokens=11_759)
    big = InstanceSpec("agg", AGG, kv_capacity_tokens=483_618)
    wl = Workload(np.full(4, 11_000, np.int32), np.full(4, 2_000, np.int32), np.arange(4) * 60.0)
    cfg = SimConfig(instances=(small, big), routing="round_robin")
    res = simulate(cfg, wl)
    s = res.summary()
    assert (s["finished"], s["dropped"], s["preemptions"]) == (4, 0, 0), s["drop_reasons"]
    assert set(res.columns["p_inst"].tolist()) == {1}
