"""plan.layout_pick: the default layout leaves KV room for a decode batch that is not dominated
by the weight read (or the most it can), and says why when it widens."""

from __future__ import annotations

import dataclasses

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import DoesNotFitError
from pdplan.parallel import Layout
from pdplan.perf.memory import plan_memory
from pdplan.plan.layout_pick import KV_BATCH_CAP, KVNeed, default_layout

L70 = get_model("llama-3.1-70b")


def test_balance_batch_is_weights_over_one_requests_kv() -> None:
    lay = Layout.parse("tp4")
    mem = plan_memory(L70, get_gpu("h100"), lay, context=4500)
    need = KVNeed(4500)
    # 32.9 GiB of weights per GPU / (4,500 tokens x 80 KiB per GPU) = 95.7 -> 96 requests
    assert need.balance(mem, lay) == 96
    assert need.wanted(mem, lay) == KV_BATCH_CAP  # capped
    assert KVNeed(4500, 4).wanted(mem, lay) == 4  # a closed loop of 4 clients needs 4
    assert KVNeed(4500, 1, "prefill").wanted(mem, lay) == 1
    # at 1M tokens a request's KV outweighs the weights: one request is the batch asked
    assert KVNeed(1_000_000).wanted(mem, lay) == 1


def test_kv_starved_default_widens_with_a_note() -> None:
    picked: list[str] = []
    lay = default_layout(L70, get_gpu("a100-40gb"), picked=picked, need=KVNeed(4500))
    assert str(lay) == "tp8" and len(picked) == 1
    assert picked[0].startswith("tp4 leaves KV room for only 2 requests of 4,500 tokens")
    # weights only (no KV asked), tp4 still fits: the old criterion
    assert str(default_layout(L70, get_gpu("a100-40gb"), need=KVNeed(0))) == "tp4"
    # a prefill instance needs one prompt: tp4 holds two
    assert str(default_layout(L70, get_gpu("a100-40gb"), need=KVNeed(4000, 1, "prefill"))) == "tp4"


def test_falls_back_to_the_layout_holding_the_most() -> None:
    picked: list[str] = []
    # a 5 GiB L40S: tp8-pp8 holds the weights but KV for 6 requests of 4,500 tokens, not 16
    small = dataclasses.replace(get_gpu("l40s"), hbm_gib=5.0)
    lay = default_layout(L70, small, picked=picked, need=KVNeed(4500))
    assert str(lay) == "tp8-pp8" and len(picked) == 1
    assert picked[0].endswith("using tp8-pp8, the layout up to tp8-pp8 that holds the most (6)")


def test_a_request_no_layout_holds_is_named_without_context_clause() -> None:
    roomy = dataclasses.replace(L70, max_position_embeddings=10**10)
    with pytest.raises(DoesNotFitError) as e:
        default_layout(roomy, get_gpu("h100"), need=KVNeed(10**9))
    msg = str(e.value)
    assert "weights fit, but a request (ISL + OSL) of 1,000,000,000 tokens needs" in msg
    assert "context window" not in msg and e.value.need_bytes > e.value.have_bytes > 0


def test_kv_sizing_reads_each_engines_flag() -> None:
    from pdplan.perf.sglang_memory import sglang_mem_fraction
    from pdplan.plan.layout_pick import KVSizing

    g, lay = get_gpu("h100"), Layout(tp=8)
    assert KVSizing().of(g, lay) == (0.9, False)  # no engine: 0.9 of the device
    assert KVSizing("vllm").of(g, lay) == (0.9, False)  # --gpu-memory-utilization
    assert KVSizing("trtllm").of(g, lay) == (0.9, True)  # of what the weights leave free
    frac, of_free = KVSizing("sglang").of(g, lay)
    assert (frac, of_free) == (sglang_mem_fraction(g.hbm_gib, lay, None, False), False)
    assert frac < 0.9  # SGLang's own rule reserves more at TP8 on an 80 GiB part
    # the flag replaces the fraction and keeps how the engine reads it
    assert KVSizing("trtllm", 0.5).of(g, lay) == (0.5, True)
    assert KVSizing("sglang", 0.7).of(g, lay) == (0.7, False)
