"""Small-M tile padding never outlasts the weight stream (hardware.padding_cap)."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.hardware import padding_cap


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200-sxm", "b200-sxm", "b300-sxm", "a100-sxm"])
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_fitted_padding_stays_below_the_cap(gpu: str, engine: str) -> None:
    """The GPUs the efficiencies were fitted on (and A100) keep the fitted padding: the cap
    only bites where the math is slow for the bandwidth."""
    g, eff = get_gpu(gpu), get_efficiency(engine, gpu)
    cap = padding_cap(g.bf16_tflops * 1e12, 2.0, eff.gemm_eta, g.hbm_bytes_per_s, eff.mem_eta)
    assert eff.gemm_m_half < cap
    if gpu != "a100-sxm":  # grouped MoE GEMMs likewise on the fit GPUs
        assert eff.gemm_m_half < cap * eff.moe_eta


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_batch1_decode_follows_bandwidth_on_a_low_flop_gpu(engine: str) -> None:
    """H20 (148 TFLOP/s, 4.0 TB/s) decodes Llama-3.1-70B TP4 at batch 1 no slower than H100
    (989 TFLOP/s, 3.35 TB/s): at M = 1 the step streams weights; charged the fitted padding at
    H20's compute rate it came out 1.8x slower. Prefill stays compute-bound (~1/7 the FLOP/s)."""
    model, lay = get_model("llama-3.1-70b"), Layout(tp=4)
    h20 = CostModel(model, get_gpu("h20"), lay, engine)
    h100 = CostModel(model, get_gpu("h100-sxm"), lay, engine)
    assert h20.decode_step(1, 1100) <= h100.decode_step(1, 1100)
    assert h20.prefill_time(4096) > 4 * h100.prefill_time(4096)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_dtype_at_a_wider_rate_pads_less(engine: str) -> None:
    """gpt-oss's MXFP4 experts run at the BF16 rate on A100 and the FP8 rate on H20 / H100: the
    padding a library carries is bounded by the 4-bit stream, not a BF16 one. With the BF16 cap
    the batch-8 decode on A100 came out 32 ms against 9.5 on H100 (bandwidth: 1.64x) and H20
    (1.19x H100's bandwidth) slower than H100."""
    model, lay = get_model("gpt-oss-120b"), Layout(tp=1)
    t = {g: CostModel(model, get_gpu(g), lay, engine).decode_step(8, 2048) for g in
         ("h100-sxm", "h20", "a100-sxm")}  # fmt: skip
    assert t["h20"] <= t["h100-sxm"] * 1.02
    assert t["a100-sxm"] < 1.8 * t["h100-sxm"]


def test_integer_weight_only_keeps_the_bf16_cap() -> None:
    from pdplan.perf.hardware import pad_bytes

    assert pad_bytes("int4", 0.52) == pad_bytes("int8_wo", 1.0) == 2.0
    assert pad_bytes("mxfp4", 0.53) == 0.53 and pad_bytes("fp8", 1.1) == 1.1


def test_mla_decode_stays_memory_bound_on_a_low_flop_gpu() -> None:
    """DeepSeek-V3 TP8 at batch 256, 2k context: every rank reads the whole latent (~9 ms on
    H20's 4 TB/s). TensorRT-LLM's fitted prefill attention efficiency (0.3) made the absorbed
    decode compute-bound on H20 (148 TFLOP/s): slower than H100, whose bandwidth is lower."""
    model, lay = get_model("deepseek-v3"), Layout(tp=8)
    h20, h100 = (CostModel(model, get_gpu(g), lay, "trtllm") for g in ("h20", "h100-sxm"))
    assert h20.decode_step(256, 2048) < h100.decode_step(256, 2048)
