"""Peak rates and element sizes one instance's kernels run at (built by CostModel)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan.errors import ConfigError

__all__ = ["ACT", "Hardware", "check_weight_dtypes", "compute_dtype", "pad_bytes", "padding_cap"]

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
    moe_pad_cap: float = math.inf  # the same for the routed experts' GEMMs (their dtype's)


def padding_cap(flops: float, wbytes: float, gemm_eta: float, hbm: float, mem_eta: float) -> float:
    """Most rows of tile padding a GEMM library lets a small-M GEMM carry, rows: the padded
    math of m_half rows (2 FLOP per row and weight element, at `flops` FLOP/s x gemm_eta) may
    take at most the weights' stream time (`wbytes` B per element at hbm B/s x mem_eta); past
    that the library runs a streaming kernel instead (swap-AB / split-K GEMV, as cuBLAS and
    CUTLASS pick for decode-sized M).
    # 2 * m_half * K * N / (flops * gemm_eta) = K * N * wbytes / (hbm * mem_eta)
    #   => m_half = flops * gemm_eta * wbytes / (2 * hbm * mem_eta)
    For BF16 (2 B per element) that is flops / B/s; a dtype whose peak doubles as its element
    halves (FP8 on Hopper) keeps it, one that runs at a wider dtype's rate gets less: FP8 or
    MXFP4 experts on A100 (BF16 rate) 0.5x / 0.27x, FP4 on Hopper (FP8 rate) 0.56x, weight-only
    INT4 (BF16 rate) 0.26x. Charged the BF16 cap, gpt-oss's MXFP4 experts on A100 came out
    compute-bound on padding (batch-8 decode 32 ms against 9.5 on H100). The fitted
    gemm_m_half (8-80 rows) sits below the BF16 cap
    on every GPU the efficiencies were fitted on (H100 ~240 rows with vLLM's etas, B200 ~235),
    on A100 (~120) and MI300X (~130); on H20 (148 TFLOP/s at 4.0 TB/s: ~30) the uncapped
    padding made batch-1 decode compute-bound, slower than on the lower-bandwidth H100
    (Llama-3.1-8B TP1: 13.2 ms against 6.9)."""
    return flops * gemm_eta * wbytes / (2.0 * hbm * mem_eta)


def pad_bytes(weight_dtype: str, wbytes: float) -> float:
    """Bytes per element padding_cap weighs a GEMM's stream by: the dtype's own (`wbytes`),
    but 2 (BF16) for integer weight-only formats (INT4 AWQ / GPTQ, INT8 W8A16), whose kernels
    (Marlin, Machete) dequantize with per-group scales and zero points in the inner loop: on
    the 45 vLLM Kimi-K2.5 INT4 rows (B200) the 4-bit cap put TPOT 39 % under the measured
    (log -0.49; -0.18 with the BF16 cap), where the float formats' own caps moved the 69 vLLM
    gpt-oss FP4-on-H100 rows from +0.05 to 0.00."""
    return 2.0 if weight_dtype.lower() in ("int4", "int8_wo") else wbytes


def compute_dtype(weight_dtype: str) -> str:
    """GEMM input dtype for weights stored in `weight_dtype`: weight-only int4 / int8
    dequantise to BF16; W4A8 runs on FP8 tensor cores; fp8 / fp4 use their own."""
    d = weight_dtype.lower()
    if d == "w4a8":
        return "fp8"
    return "bf16" if d in ("int4", "int8_wo") else d


# Weight formats whose GEMM kernels need compute capability 8.0+ (Ampere): FP8 (CUTLASS
# scaled-mm on SM 8.9+, FP8 Marlin W8A16 on SM 8.0+), NVFP4 / MXFP4 (FP4 Marlin W4A16 on SM
# 8.0+, native on Blackwell) and W4A8 (FP8 activations); vLLM's quantization configs report
# get_min_capability() 80 for each. INT4 GPTQ / AWQ kernels also run on Volta / Turing.
_SM80_WEIGHTS = ("fp8", "fp4", "nvfp4", "mxfp4", "w4a8")


def check_weight_dtypes(gpu_name: str, fp16_only: bool, *dtypes: str) -> None:
    """Refuse FP8 / FP4 weights on a pre-Ampere GPU (GPUSpec.fp16_only), naming why."""
    bad = sorted({d for d in dtypes if d.lower() in _SM80_WEIGHTS})
    if fp16_only and bad:
        raise ConfigError(
            f"{'/'.join(bad)} weights need an Ampere or newer GPU (compute capability 8.0+: "
            f"FP8 / FP4 Marlin and CUTLASS kernels); {gpu_name} has FP16 tensor cores only: use "
            "bf16 (run as FP16) or int4 (GPTQ / AWQ) weights"
        )
