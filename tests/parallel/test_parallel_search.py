"""Enumerating layouts for N GPUs and the seed's composition rule."""

from __future__ import annotations

from pdplan.parallel import Layout, check_layout, enumerate_layouts, seed_rule

from ._specs import dsv3, llama70b


def test_enumerate_dense_8() -> None:
    lays = enumerate_layouts(llama70b(), 8)
    names = [str(x) for x in lays]
    assert names == ["tp8", "tp4-pp2", "tp2-pp4", "tp1-pp8"]
    assert all(x.gpus == 8 and x.ep == 1 and x.dp == 1 for x in lays)


def test_enumerate_up_to_and_deterministic() -> None:
    a = enumerate_layouts(llama70b(), 4, up_to=True)
    assert [x.gpus for x in a] == sorted(x.gpus for x in a)
    assert {x.gpus for x in a} == {1, 2, 3, 4}  # tp1-pp3 is valid (uneven 27/27/26)
    assert a == enumerate_layouts(llama70b(), 4, up_to=True)


def test_enumerate_moe_has_ep_and_dp_attention() -> None:
    lays = enumerate_layouts(dsv3(), 8, max_pp=1)
    assert Layout(tp=8, ep=8) in lays and Layout(tp=1, dp=8, ep=8) in lays
    assert all(256 % x.ep == 0 and check_layout(dsv3(), x).ok for x in lays)
    assert all(x.cp == 1 for x in lays)


def test_enumerate_cp_only_for_long_context() -> None:
    assert not any(x.cp > 1 for x in enumerate_layouts(llama70b(), 16, context_len=8192))
    assert any(x.cp > 1 for x in enumerate_layouts(llama70b(), 16, context_len=131072))


def test_seed_rule() -> None:
    pick = seed_rule(llama70b(), 16, gpus_per_node=8)
    assert pick.layout == Layout(tp=8, pp=2)
    assert "TP=8 fills the node" in pick.reason and "PP=2 across nodes" in pick.reason
    moe = seed_rule(dsv3(), 8)
    assert moe.layout == Layout(tp=8, ep=8)
    long = seed_rule(llama70b(), 16, context_len=131072)
    assert long.layout == Layout(tp=8, cp=2, sp=True)
    assert seed_rule(llama70b(), 6).layout == Layout(tp=2, pp=3)


def test_seed_rule_inside_one_node_says_so() -> None:
    # 3 GPUs of an 8-GPU node: no TP of 3 divides 64 heads, so TP=1 and 3 stages, all in the
    # node (it said "TP=1 fills the node; PP=3 across nodes")
    pick = seed_rule(llama70b(), 3, gpus_per_node=8)
    assert pick.layout == Layout(tp=1, pp=3)
    assert "fills the node" not in pick.reason and "across nodes" not in pick.reason
    assert "TP=1 (largest TP <= 3 dividing the heads and the 3 GPUs)" in pick.reason
    assert "PP=3 inside the node" in pick.reason
