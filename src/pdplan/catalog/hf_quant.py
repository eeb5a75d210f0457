"""Map a checkpoint's quantization_config / hf_quant_config to one weight dtype name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pdplan.errors import ConfigError

__all__ = ["weight_dtype_from_config"]

# quant_method / quant_algo spellings -> our dtype names (DTYPE_BYTES keys in model_spec.py)
_METHODS: dict[str, str] = {
    "fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "mxfp4": "fp4",
    "nvfp4": "fp4",
    "fp4": "fp4",
    "w4a16_awq": "int4",
    "int4_awq": "int4",
    "awq": "int4",
    "gptq": "int4",
    "w4a8_awq": "int4",
    "int8": "int8",
    "w8a8": "int8",
}

# HF torch_dtype -> the dtype an engine serves the weights in. fp32 checkpoints are served in
# 16 bits: vLLM's and SGLang's `--dtype auto` cast a float32 config to a half type (FP16 in
# older vLLM, BF16 where the GPU supports it in newer), so they are priced as 2-byte weights.
_TORCH: dict[str, str] = {
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
    "float32": "bf16",
    "float": "bf16",
    "fp32": "bf16",
    "auto": "bf16",
}


def _from_groups(groups: Mapping[str, Any]) -> str | None:
    """compressed-tensors / ModelOpt config_groups: the narrowest weight format wins.

    The narrowest group is the routed experts in every mixed checkpoint we read (Kimi-K2.5
    int4 experts, Qwen3.6 NVFP4 experts with fp8 attention), and experts are most of the bytes.
    """
    best: tuple[int, str] | None = None
    for g in groups.values():
        w = g.get("weights") if isinstance(g, Mapping) else None
        if not isinstance(w, Mapping) or not w.get("num_bits"):
            continue
        bits, kind = int(w["num_bits"]), str(w.get("type", "int"))
        name = {4: "fp4" if kind == "float" else "int4", 8: "fp8" if kind == "float" else "int8"}
        if bits in name and (best is None or bits < best[0]):
            best = (bits, name[bits])
    return best[1] if best else None


def weight_dtype_from_config(
    quant: Mapping[str, Any] | None,
    torch_dtype: str | None,
    fail: Callable[[str], ConfigError],
) -> str:
    """Weight dtype of the released checkpoint: quantization first, then torch_dtype, else bf16."""
    if not quant:
        key = str(torch_dtype or "bfloat16").lower().replace("torch.", "")
        if key not in _TORCH:
            raise fail(
                f"unknown torch_dtype {torch_dtype!r} without a quantization_config "
                f"(expected one of {', '.join(sorted(_TORCH))})"
            )
        return _TORCH[key]
    moe_algo = str(quant.get("moe_quant_algo") or "").lower()
    if moe_algo in _METHODS:  # ModelOpt MIXED_PRECISION: experts in moe_quant_algo
        return _METHODS[moe_algo]
    groups = quant.get("config_groups")
    if isinstance(groups, Mapping) and (found := _from_groups(groups)):
        return found
    for key in ("quant_algo", "quant_method"):
        v = str(quant.get(key) or "").lower()
        if v in _METHODS:
            return _METHODS[v]
        if v == "bitsandbytes":
            return "int4" if quant.get("load_in_4bit") else "int8"
    raise fail(
        f"unknown quantization {dict((k, quant.get(k)) for k in ('quant_method', 'quant_algo'))}"
    )
