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
    cap = padding_cap(g.bf16_tflops * 1e12, eff.gemm_eta, g.hbm_bytes_per_s, eff.mem_eta)
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
