"""Small-M GEMM tile under-fill scales with the GPU's machine balance (efficiency.tile_scale)."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import tile_scale


def _scale(name: str) -> float:
    g = get_gpu(name)
    return tile_scale(g.bf16_tflops, g.hbm_tbps, g.matmul_eta)


@pytest.mark.parametrize("name", ["h100-sxm", "b200-sxm", "b300-sxm", "gb200"])
def test_fit_gpus_do_not_move(name: str) -> None:
    assert _scale(name) == 1.0


def test_low_balance_gpus_pad_less() -> None:
    assert _scale("h20") == pytest.approx(148 / 4.0 / (2250 / 7.75), rel=1e-6)
    assert 0.5 < _scale("a100-sxm") < _scale("h200-sxm") < 1.0


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_batch1_decode_follows_bandwidth_on_a_low_flop_gpu(engine: str) -> None:
    """H20 (148 TFLOP/s, 4.0 TB/s) decodes Llama-3.1-70B TP4 at batch 1 no slower than H100
    (989 TFLOP/s, 3.35 TB/s): at M = 1 the step streams weights; it came out 1.8x slower when
    the fitted tile padding was charged at H20's compute rate."""
    model, lay = get_model("llama-3.1-70b"), Layout(tp=4)
    h20 = CostModel(model, get_gpu("h20"), lay, engine).decode_step(1, 1100)
    h100 = CostModel(model, get_gpu("h100-sxm"), lay, engine).decode_step(1, 1100)
    assert h20 <= h100
    # prefill stays compute-bound: H20 has ~1/7 of the H100's FLOP/s
    p20 = CostModel(model, get_gpu("h20"), lay, engine).prefill_time(4096)
    p100 = CostModel(model, get_gpu("h100-sxm"), lay, engine).prefill_time(4096)
    assert p20 > 4 * p100
