"""accuracy --simulate on setups outside the measured file: every one is predicted, inside
physical bounds (the roofline below, a loose band above) and monotone in the clients."""

from __future__ import annotations

import math

import pytest
from tests.perf._rows import measured_row

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.memory import plan_memory
from pdplan.plan.accuracy_sim import simulate_measured_row

# (model, system as measured files spell it, engine, weight dtype, layout): models and GPUs
# that ../shared/data/calibration/measured_serving.csv does not hold, so no efficiency fitted
# on it has seen them (A100, L40S, H200, H20, MI300X, MI355X, RTX PRO 6000; Llama-3.1-70B,
# Mixtral, Qwen3-30B-A3B, Llama-4-Scout, gpt-oss-20b, Gemma 4)
UNSEEN = [
    ("meta-llama/Meta-Llama-3.1-70B", "h200_sxm", "vllm", None, Layout(tp=4)),
    ("meta-llama/Meta-Llama-3.1-70B", "a100_sxm", "vllm", None, Layout(tp=8)),
    ("meta-llama/Meta-Llama-3.1-8B", "l40s", "vllm", None, Layout(tp=1)),
    ("mistralai/Mixtral-8x7B-v0.1", "h100_sxm", "sglang", None, Layout(tp=2)),
    ("Qwen/Qwen3-30B-A3B", "mi300x", "vllm", None, Layout(tp=1)),
    ("Qwen/Qwen3-235B-A22B", "mi355x", "sglang", "fp8", Layout(tp=8, moe_tp=1, ep=8)),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "h100_sxm", "vllm", None, Layout(tp=4)),
    ("openai/gpt-oss-20b", "h100_sxm", "trtllm", None, Layout(tp=1)),
    ("google/gemma-4-26B-A4B", "h20", "sglang", None, Layout(tp=2)),
    ("Qwen/Qwen3-32B", "rtx_pro_6000", "vllm", "fp8", Layout(tp=2)),
]
ISL, OSL = 1024, 128


def _row(case: tuple, concurrency: int) -> MeasuredRow:
    model, system, engine, dtype, layout = case
    return measured_row(
        backend=engine,
        model_path=model,
        system=system,
        weight_dtype=dtype,
        layout=layout,
        isl=ISL,
        osl=OSL,
        concurrency=concurrency,
    )


def _floors(case: tuple) -> tuple[float, float]:
    """Roofline floors of one lone request, ms: (TPOT, TTFT). A decode step reads at least the
    active weights' bytes, spread evenly over the GPUs (HBM bytes / bandwidth); the prompt costs
    at least 2 x active parameters x ISL FLOPs (PaLM appendix B) at the GPUs' dense peak."""
    model_name, system, _, dtype, layout = case
    model, gpu = get_model(model_name), get_gpu(system)
    mem = plan_memory(model, gpu, layout, dtype)
    bytes_per_param = mem.weights_bytes * layout.gpus / model.total_params  # B / parameter
    active = model.active_params
    tpot = active * bytes_per_param / layout.gpus / gpu.hbm_bytes_per_s  # s
    peak = gpu.tflops(mem.weight_dtype) * 1e12  # FLOP/s per GPU
    ttft = 2.0 * active * ISL / (layout.gpus * peak)  # s
    return tpot * 1e3, ttft * 1e3


@pytest.mark.parametrize("case", UNSEEN, ids=[f"{c[0].split('/')[-1]}@{c[1]}" for c in UNSEEN])
def test_an_unseen_setup_is_predicted_within_physical_bounds(case: tuple) -> None:
    lone, busy = simulate_measured_row(_row(case, 1)), simulate_measured_row(_row(case, 64))
    tpot_floor, ttft_floor = _floors(case)
    for p in (lone, busy):
        assert math.isfinite(p.ttft_ms) and math.isfinite(p.tpot_ms)
    # no faster than the hardware allows ...
    assert lone.tpot_ms >= tpot_floor
    assert lone.ttft_ms >= ttft_floor
    # ... and not absurdly slower: a lone request on an idle instance is within a few times its
    # roofline plus the fixed costs engines add (launches, host loop, HTTP; tens of ms)
    assert lone.tpot_ms <= 8.0 * tpot_floor + 15.0
    assert lone.ttft_ms <= 8.0 * ttft_floor + 250.0
    # 64 clients share the steps: each token and each first token comes later, never sooner
    assert busy.tpot_ms > lone.tpot_ms
    assert busy.ttft_ms > lone.ttft_ms
