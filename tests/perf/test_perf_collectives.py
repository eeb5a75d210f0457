"""Collective formulas against hand-computed values."""

from __future__ import annotations

import pytest

from pdplan.perf.collectives import Links, all_gather_s, all_reduce_s, all_to_all_s, p2p_s


def test_ring_all_reduce() -> None:
    # 2(n-1)/n * bytes / bw: n=8, 1 GB at 100 GB/s -> 2*7/8*0.01 s = 17.5 ms, + 10 us alpha
    assert all_reduce_s(1e9, 8, 100e9, 10e-6) == pytest.approx(0.0175 + 10e-6)
    assert all_reduce_s(1e9, 1, 100e9, 10e-6) == 0.0


def test_all_gather_and_all_to_all_and_p2p() -> None:
    assert all_gather_s(1e9, 4, 100e9, 0.0) == pytest.approx(3 / 4 * 0.01)
    assert all_to_all_s(5e8, 8, 100e9, 0.0, eta=0.5) == pytest.approx(0.01)
    assert p2p_s(2e9, 100e9, 1e-3) == pytest.approx(0.021)


def test_cross_domain_latency_grows_with_domains() -> None:
    # hand-computed: 8-GPU domains, 16 KB message (a decode token's all-reduce): across k
    # domains NCCL's tree takes 2 log2(k) hops of nic_alpha / 2 each (a ring's 2(k-1) from
    # k = 4 on is slower), so the latency is log2(k) * nic_alpha: 1x at k = 2, 3x at k = 8
    links = Links(450e9, 8e-6, 0.75, 50e9, 20e-6, 0.85, 8)
    small = 16e3
    two, eight = links.all_reduce(small, 16), links.all_reduce(small, 64)
    intra = all_reduce_s(small, 8, 450e9, 8e-6, 0.75)
    assert two == pytest.approx(intra + all_reduce_s(small / 8, 2, 50e9, 20e-6, 0.85))
    assert eight == pytest.approx(intra + all_reduce_s(small / 8, 8, 50e9, 3 * 20e-6, 0.85))
    assert eight - intra > 2.5 * (two - intra)


def test_bridged_cards_reduce_over_pcie_inside_the_server() -> None:
    # H100 NVL: NVLink bridges pair the cards (domain 2) in an 8-GPU server; TP8 crosses PCIe
    # between the pairs (node_bw, the intra-server latency), not the NICs
    links = Links(300e9, 8e-6, 0.75, 50e9, 20e-6, 0.85, 2, 8, 64e9)
    msg = 16e3
    intra = all_reduce_s(msg, 2, 300e9, 8e-6, 0.75)
    assert links.all_reduce(msg, 8) == pytest.approx(
        intra + all_reduce_s(msg / 2, 4, 64e9, 8e-6, 0.75)
    )
    assert links.all_reduce(msg, 16) > links.all_reduce(msg, 8)  # two servers: the NICs
    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel

    m = get_model("llama-3.1-70b")  # batch-1 decode: NVL (bridges + PCIe) beats plain PCIe
    nvl, pcie = (CostModel(m, get_gpu(g), Layout(tp=8)).decode_step(1, 2048) for g in
                 ("h100-nvl", "h100-pcie"))  # fmt: skip
    assert nvl < pcie


def test_tp_past_the_node_stops_paying_for_decode() -> None:
    # Llama-3.1-70B on H200 (8-GPU NVLink nodes): TP8 -> TP64 halves nothing worth the 7-node
    # ring latency of 160 all-reduces per step, so batch-1 decode must get slower past TP16
    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel

    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    step = {tp: CostModel(m, g, Layout(tp=tp)).decode_step(1, 1000) for tp in (8, 16, 64)}
    assert step[8] < step[16] < step[64]
