"""Quant-mode strings of measured rows (AIConfigurator's spellings and others) -> pdplan dtypes."""

from __future__ import annotations

from pdplan.errors import InputError

__all__ = ["quant_to_dtype"]

# gemm_quant_mode / moe_quant_mode values -> pdplan weight dtypes. The spellings are
# AIConfigurator's GEMMQuantMode / MoEQuantMode (sdk/common.py) plus plain dtype names.
_QUANT = {
    "": None,
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "fp8": "fp8",
    "fp8_block": "fp8",
    "fp8_blockwise": "fp8",
    "fp8_static": "fp8",
    "fp8_ootb": "fp8",
    "mxfp8": "fp8",
    "sq": "int8",  # SmoothQuant W8A8 on INT8 tensor cores
    "int8": "int8",
    "w4afp8": "w4a8",
    "w4a8_mxfp4_mxfp8": "w4a8",
    "w4a8_mxfp4_mxfp8_trtllm": "w4a8",
    "nvfp4": "fp4",
    "fp4": "fp4",
    "mxfp4": "mxfp4",
    "w4a16_mxfp4": "fp4",
    "w4a16_mxfp4_cutlass": "int4",  # MXFP4 weights, BF16 activations (Hopper)
    "int4_wo": "int4",
    "int4": "int4",
    "int8_wo": "int8_wo",  # INT8 weights, BF16 activations: GEMMs run in BF16
    "none": None,
    "auto": None,
}

# Spellings outside the table, read by what they name (checked in order): other tools' FP8
# variants (fp8_dynamic, fp8_per_tensor, fp8_pc_pt), 4-bit float formats (nvfp4_awq), and
# 4-bit integer weight-only schemes (AWQ, GPTQ: INT4 weights, BF16 activations).
_QUANT_PATTERNS = (
    ("w4a8", "w4a8"),
    ("fp8", "fp8"),
    ("fp4", "fp4"),
    ("awq", "int4"),
    ("gptq", "int4"),
    ("int4", "int4"),
)


def quant_to_dtype(q: str) -> str | None:
    """Map a quant-mode string to a pdplan dtype (None = the model's default)."""
    key = q.strip().lower()
    if key in _QUANT:
        return _QUANT[key]
    for part, dtype in _QUANT_PATTERNS:
        if part in key:
            return dtype
    raise InputError(f"unknown quant mode {q!r}; known: {', '.join(k for k in _QUANT if k)}")
