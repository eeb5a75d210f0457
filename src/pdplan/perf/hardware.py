"""Peak rates and element sizes one instance's kernels run at (built by CostModel)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ACT", "Hardware", "compute_dtype", "padding_cap"]

ACT = 2.0  # BF16 activation bytes


@dataclass(frozen=True)
class Hardware:
    """Peaks in SI units: FLOP/s and bytes/s; element sizes in bytes."""

    gemm_flops: float
    moe_flops: float
    attn_flops: float
    hbm: float
    wb: float  # weight bytes / element (attention, dense FFN)
    mb: float  # MoE expert weight bytes / element
    kvb: float  # KV cache bytes / element
    fp8_flops: float = 0.0  # FP8 tensor peak (DSA indexer logits); 0 = use attn_flops
    pad_cap: float = math.inf  # most rows of tile padding a small-M GEMM carries (padding_cap)


def padding_cap(bf16_flops: float, gemm_eta: float, hbm: float, mem_eta: float) -> float:
    """Most rows of tile padding a GEMM library lets a small-M GEMM carry, rows: the padded
    math of m_half rows (2 FLOP per row and weight element) may take at most the weights'
    stream time; past that the library runs a streaming kernel instead (swap-AB / split-K
    GEMV, as cuBLAS and CUTLASS pick for decode-sized M). In BF16 terms (2 B and 2 FLOP per
    element: rows = FLOP/s / B/s), so it is one figure per GPU and engine for every dtype
    whose peak doubles as its element halves. The fitted gemm_m_half (8-80 rows) sits below it
    on every GPU the efficiencies were fitted on (H100 ~240 rows with vLLM's etas, B200 ~235),
    on A100 (~120) and MI300X (~130); on H20 (148 TFLOP/s at 4.0 TB/s: ~30) the uncapped
    padding made batch-1 decode compute-bound, slower than on the lower-bandwidth H100
    (Llama-3.1-8B TP1: 13.2 ms against 6.9)."""
    return bf16_flops * gemm_eta / (hbm * mem_eta)


def compute_dtype(weight_dtype: str) -> str:
    """GEMM input dtype for weights stored in `weight_dtype`: weight-only int4 / int8
    dequantise to BF16; W4A8 runs on FP8 tensor cores; fp8 / fp4 use their own."""
    d = weight_dtype.lower()
    if d == "w4a8":
        return "fp8"
    return "bf16" if d in ("int4", "int8_wo") else d
