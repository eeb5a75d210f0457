"""Kernel launches per step count a mixer-only or FFN-only block as half a layer."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf import layer_costs as lc
from pdplan.perf.costmodel import CostModel


def test_full_layers_of_standard_and_block_models() -> None:
    assert lc.full_layers(lc.layer_classes(get_model("llama-3.1-70b"))) == 80
    # Nemotron-3 Nano: 52 blocks, each one of Mamba (23), MoE (23) or attention (6)
    assert lc.full_layers(lc.layer_classes(get_model("nemotron-3-nano-30b-a3b"))) == 26


def test_block_model_fixed_overhead_is_half_its_block_count() -> None:
    m, g = get_model("nemotron-3-nano-30b-a3b"), get_gpu("b200")
    cm = CostModel(m, g, Layout(tp=2), "vllm", "fp8")
    eff = cm.eff
    # step_s + kernel_s * kernels_per_layer * 26 layer-equivalents (not 52)
    assert cm._fixed_overhead == pytest.approx(
        eff.step_s + eff.kernel_s * eff.kernels_per_layer * 26
    )
    # batch-1 decode on B200 TP2 FP8: measured TPOT 2.91 ms (a public vLLM 0.16 run; the model
    # gave 4.2 ms when every block paid a full layer's launches): now within 20 %
    assert cm.decode_step(1, 2300) == pytest.approx(2.91e-3, rel=0.2)


def test_sglang_moe_layers_pay_their_own_kernels() -> None:
    g = get_gpu("h100")
    moe = get_model("deepseek-v3")  # 58 MoE layers with a shared expert, 3 dense first layers
    sg = CostModel(moe, g, Layout(tp=8), "sglang", "fp8")
    e = sg.eff
    assert e.moe_kernels > 0 and e.shared_expert_kernels > 0
    per_moe = e.moe_kernels + e.shared_expert_kernels
    assert sg._fixed_overhead == pytest.approx(
        e.step_s + e.kernel_s * (e.kernels_per_layer * 61 + per_moe * 58)
    )
    # a dense model pays only the per-layer count
    dense = CostModel(get_model("llama-3.1-70b"), g, Layout(tp=4), "sglang", "bf16")
    assert dense._fixed_overhead == pytest.approx(e.step_s + e.kernel_s * e.kernels_per_layer * 80)
    # engines whose fit carries them in kernel_s count none
    assert lc.moe_kernels(moe, CostModel(moe, g, Layout(tp=8), "vllm", "fp8").eff) == 0


def test_trtllm_mla_layers_pay_their_own_kernels() -> None:
    g = get_gpu("b200")
    trt = CostModel(get_model("deepseek-r1"), g, Layout(tp=8, ep=8), "trtllm", "fp8")
    e = trt.eff
    assert e.mla_kernels > 0 and e.moe_kernels == 0
    # every one of the 61 layers is MLA attention
    assert trt._fixed_overhead == pytest.approx(
        e.step_s + e.kernel_s * (e.kernels_per_layer + e.mla_kernels) * 61
    )
    # a GQA model of the same engine pays none of them
    gqa = CostModel(get_model("qwen3-235b-a22b"), g, Layout(tp=8, ep=8), "trtllm", "fp8")
    assert lc.mla_kernels(gqa.model, e) == 0
    # a hybrid counts only its MLA layers, not its linear-attention ones
    k3 = get_model("kimi-k3")
    n_mla = sum(1 for t in k3.layer_types if t == "full")
    assert 0 < n_mla < k3.num_layers
    assert lc.mla_kernels(k3, e) == pytest.approx(e.mla_kernels * n_mla)
    # vLLM and SGLang carry their MLA launches in their fitted counts
    for engine in ("vllm", "sglang"):
        other = CostModel(get_model("deepseek-r1"), g, Layout(tp=8, ep=8), engine, "fp8")
        assert lc.mla_kernels(other.model, other.eff) == 0
