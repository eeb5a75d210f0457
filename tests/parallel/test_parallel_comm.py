"""Communication table: bytes and counts per collective, hand-computed for Llama-70B / DS-V3."""

from __future__ import annotations

import pytest

from pdplan.parallel import Layout, comm_table, comm_totals

from ._specs import dsv3, llama70b


def _by_name(ops: list) -> dict:
    return {op.name: op for op in ops}


def test_tp_two_allreduces_per_layer() -> None:
    ops = comm_table(llama70b(), Layout(tp=8), tokens=1000)
    assert [o.collective for o in ops] == ["all-reduce", "all-reduce"]
    # 1000 tokens x 8192 hidden x 2 B = 16,384,000 B per call, 80 layers each
    for o in ops:
        assert o.bytes_per_call == 16_384_000
        assert o.layers == 80 and o.count == 1 and o.group_size == 8
        assert o.wire_bytes_per_call == pytest.approx(2 * 7 / 8 * 16_384_000)  # ring 2(n-1)/n
    tot = comm_totals(ops, 1000, 80)
    assert tot["bytes_per_step"] == pytest.approx(2 * 80 * 2 * 7 / 8 * 16_384_000)
    # 2 all-reduces of 8192 x 2 B per token, each sending 2 x 7/8 of it: 57,344 B
    assert tot["bytes_per_token_layer"] == pytest.approx(2 * 8192 * 2 * 2 * 7 / 8)


def test_single_gpu_has_no_comm() -> None:
    assert comm_table(llama70b(), Layout(), tokens=1000) == []


def test_sp_replaces_allreduce_with_rs_ag_same_total() -> None:
    plain = comm_totals(comm_table(llama70b(), Layout(tp=8), 512), 512, 80)
    sp_ops = comm_table(llama70b(), Layout(tp=8, sp=True), 512)
    kinds = sorted(o.collective for o in sp_ops)
    assert kinds == ["all-gather", "all-gather", "reduce-scatter", "reduce-scatter"]
    sp = comm_totals(sp_ops, 512, 80)
    # a ring all-reduce is a reduce-scatter then an all-gather, each (n-1)/n x the message
    assert sp["bytes_per_step"] == pytest.approx(plain["bytes_per_step"])
    assert sp["bytes_per_token_layer"] == pytest.approx(plain["bytes_per_token_layer"])
    rs_ag = sp["reduce-scatter_bytes_per_step"] + sp["all-gather_bytes_per_step"]
    assert rs_ag == pytest.approx(plain["all-reduce_bytes_per_step"])


def test_pp_one_p2p_per_boundary() -> None:
    ops = _by_name(comm_table(llama70b(), Layout(tp=4, pp=2), tokens=100))
    p2p = ops["stage boundary"]
    assert p2p.collective == "p2p" and p2p.scope == "step" and p2p.count == 1
    assert p2p.bytes_per_call == 100 * 8192 * 2


def test_wide_ep_all_to_all_uniform_routing() -> None:
    m = dsv3()
    # DP attention over 16 GPUs (two 8-GPU servers): wide EP, all-to-all kernels (DeepEP)
    ops = _by_name(comm_table(m, Layout(tp=1, dp=16, ep=16), tokens=4096))
    d = ops["MoE dispatch"]
    # (4096/16 tokens) x top-8 x 7168 x 2 B x 15/16 = 27,525,120 B, on 58 MoE layers
    assert d.collective == "all-to-all"
    assert d.bytes_per_call == pytest.approx(4096 / 16 * 8 * 7168 * 2 * 15 / 16)
    assert d.layers == 58 and ops["MoE combine"].layers == 58
    # the 3 dense layers gather the dp groups' tokens instead
    assert ops["FFN in (DP-attn)"].layers == 3 and "attention out" not in ops
    # on a server of 16 GPUs the same layout gathers every FFN layer: no all-to-all
    big = _by_name(comm_table(m, Layout(tp=1, dp=16, ep=16), tokens=4096, gpus_per_node=16))
    assert "MoE dispatch" not in big and big["FFN in (DP-attn)"].layers == 61


def test_tp_attention_ep_all_reduces_like_tp() -> None:
    # TP attention + EP: tokens are on every rank, one all-reduce after each FFN (vLLM
    # use_all2all_kernels = dp > 1 and use_ep): the same table as TP-sharded experts
    m = dsv3()
    ep = comm_table(m, Layout(tp=8, ep=8), tokens=4096)
    assert ep == comm_table(m, Layout(tp=8), tokens=4096)
    ops = _by_name(ep)
    assert ops["FFN out"].layers == 61 and ops["attention out"].layers == 61
    assert all(o.collective == "all-reduce" for o in ep)


def test_dp_attention_gathers_ffn_layers() -> None:
    ops = _by_name(comm_table(dsv3(), Layout(tp=1, dp=8, ep=8), tokens=800))
    assert "attention out" not in ops  # TP=1: no all-reduce
    ag = ops["FFN in (DP-attn)"]
    # inside one server: allgather / reducescatter on all 61 FFN layers (vLLM's default
    # all2all_backend), no all-to-all
    assert ag.collective == "all-gather" and ag.layers == 61 and ag.group_size == 8
    assert ag.bytes_per_call == 800 * 7168 * 2
    assert ops["FFN out (DP-attn)"].collective == "reduce-scatter"
    assert "MoE dispatch" not in ops


def test_cp_ring_passes_kv_blocks() -> None:
    ops = _by_name(comm_table(llama70b(), Layout(tp=8, cp=2), tokens=65536))
    ring = ops["K,V block pass"]
    # 32768 tokens per CP rank x (2*8*128/8 KV elems per TP rank) x 2 B, passed cp-1 = 1 times
    assert ring.bytes_per_call == 32768 * 256 * 2
    assert ring.count == 1 and ring.layers == 80
    assert ops["attention out"].bytes_per_call == 32768 * 8192 * 2


def test_layout_note_names_the_moe_communication() -> None:
    from pdplan.parallel import check_layout

    narrow = " ".join(check_layout(dsv3(), Layout(tp=8, ep=8)).notes)
    wide = " ".join(check_layout(dsv3(), Layout(tp=1, dp=16, ep=16), scaleup_domain=8).notes)
    assert "all-reduced" in narrow and "all-to-all" not in narrow
    assert "all-to-all" in wide


def test_no_all_to_all_while_ep_is_within_top_k() -> None:
    # DeepSeek-V3 routes each token to 8 experts: over EP8 its 8 copies outweigh gathering the
    # token once, so even across servers (4-GPU GB200 trays) EP8 gathers (TensorRT-LLM:
    # moe_ep_size <= top_k -> no alltoall); EP16 runs the all-to-all
    ep8 = _by_name(comm_table(dsv3(), Layout(tp=1, dp=8, ep=8), tokens=1024, gpus_per_node=4))
    assert "MoE dispatch" not in ep8 and ep8["FFN in (DP-attn)"].layers == 61
    ep16 = _by_name(comm_table(dsv3(), Layout(tp=1, dp=16, ep=16), tokens=1024, gpus_per_node=4))
    assert ep16["MoE dispatch"].collective == "all-to-all"
