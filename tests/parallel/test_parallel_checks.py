"""Validity rules of layouts: TP | heads, KV replication, PP split, EP | experts, CP, SP."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdplan.errors import ConfigError
from pdplan.parallel import (
    Layout,
    check_layout,
    pp_bubble,
    pp_stage_layers,
    require_valid,
)

from ._specs import dsv3, llama70b


def test_tp_must_divide_heads() -> None:
    chk = check_layout(llama70b(), Layout(tp=3))
    assert not chk.ok
    assert "TP=3 does not divide 64 attention heads" in chk.errors


def test_kv_heads_replicate_beyond_n_kv() -> None:
    chk = check_layout(llama70b(), Layout(tp=16), scaleup_domain=72, gpus_per_node=4)
    assert chk.ok
    assert "KV heads replicated 2x: TP=16 > 8 KV heads" in chk.notes
    assert any("spans 4 trays" in n for n in chk.notes)


def test_tp_across_nodes_warns_not_refuses() -> None:
    chk = check_layout(llama70b(), Layout(tp=16))
    assert chk.ok
    assert any("crosses nodes" in w and "never" in w for w in chk.warnings)


def test_pp_uneven_split_is_stated() -> None:
    assert pp_stage_layers(80, 3) == (27, 27, 26)
    assert pp_stage_layers(61, 4) == (16, 15, 15, 15)
    chk = check_layout(llama70b(), Layout(tp=8, pp=3))
    assert "PP=3 splits 80 layers unevenly: 27/27/26" in chk.notes


def test_pp_more_stages_than_layers() -> None:
    with pytest.raises(ConfigError, match="PP=81 exceeds the 80 layers"):
        pp_stage_layers(80, 81)


def test_pp_bubble() -> None:
    assert pp_bubble(1, 1) == 0.0
    assert pp_bubble(4, 4) == pytest.approx(3 / 7)
    assert pp_bubble(2, 8) == pytest.approx(1 / 9)


def test_ep_rules() -> None:
    assert "EP=2 on a dense model" in check_layout(llama70b(), Layout(tp=2, ep=2)).errors[0]
    chk = check_layout(dsv3(), Layout(tp=3, ep=3))
    assert "EP=3 does not divide 256 experts" in chk.errors
    assert check_layout(dsv3(), Layout(tp=8, ep=8)).ok


def test_mla_tp_divides_heads_and_latent_replicates() -> None:
    chk = check_layout(dsv3(), Layout(tp=8, ep=8))
    assert any("latent is replicated on all 8 TP ranks" in n for n in chk.notes)
    assert not check_layout(dsv3(), Layout(tp=6)).ok


def test_dp_attention_only_for_moe() -> None:
    assert not check_layout(llama70b(), Layout(tp=4, dp=2)).ok
    chk = check_layout(dsv3(), Layout(tp=1, dp=8, ep=8))
    assert chk.ok and any("DP-attention" in n for n in chk.notes)


def test_cp_needs_long_context() -> None:
    short = check_layout(llama70b(), Layout(tp=4, cp=2), context_len=8192)
    assert not short.ok and "32768" in short.errors[0]
    assert check_layout(llama70b(), Layout(tp=4, cp=2), context_len=131072).ok
    assert check_layout(llama70b(), Layout(tp=4, cp=2)).warnings


def test_sp_needs_tp() -> None:
    assert not check_layout(llama70b(), Layout(tp=1, sp=True)).ok
    assert check_layout(llama70b(), Layout(tp=8, sp=True)).ok


def test_require_valid_raises_first_error() -> None:
    with pytest.raises(ConfigError, match="TP=3 does not divide 64"):
        require_valid(llama70b(), Layout(tp=3))
    assert require_valid(llama70b(), Layout(tp=8)).ok


_pow = st.sampled_from([1, 2, 3, 4, 5, 6, 8, 12, 16, 32])


@settings(max_examples=300, deadline=None)
@given(
    tp=_pow,
    dp=_pow,
    pp=st.integers(1, 100),
    ep=_pow,
    cp=st.sampled_from([1, 2, 4]),
    moe=st.booleans(),
    ctx=st.sampled_from([None, 4096, 65536]),
)
def test_property_accepted_and_rejected(
    tp: int, dp: int, pp: int, ep: int, cp: int, moe: bool, ctx: int | None
) -> None:
    model = dsv3() if moe else llama70b()
    try:
        lay = Layout(tp=tp, dp=dp, pp=pp, ep=ep, cp=cp)
    except ConfigError as exc:  # EP does not divide the stage: refused at construction
        assert str(ep) in str(exc)
        return
    chk = check_layout(model, lay, context_len=ctx)
    if chk.ok:
        assert model.num_heads % tp == 0
        assert pp <= model.num_layers
        assert lay.gpus == tp * dp * pp * cp
        if model.moe is not None:
            assert model.moe.num_experts % ep == 0
        else:
            assert ep == 1 and dp == 1
        if cp > 1 and ctx is not None:
            assert ctx >= 32768
    else:
        nums = {str(v) for v in (tp, dp, pp, ep, cp, lay.etp)}
        assert all(any(n in e for n in nums) for e in chk.errors), chk.errors
