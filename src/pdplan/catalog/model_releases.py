"""Quantised releases whose dtypes differ by part or set the KV cache: what each checkpoint's
own quantization config says, so naming it gives what its config.json gives.

A "-NVFP4" / "-FP8" suffix alone says only the weights' format (model_names.DTYPE_SUFFIXES):
read by name, NVIDIA's ModelOpt MoE exports came out uniform FP4 with a BF16 KV cache, where
their config.json leaves attention in BF16 (exclude_modules / ignore list every layer's
self_attn or linear_attn), quantizes only the routed experts, and asks for an FP8 KV cache
(kv_cache_quant_algo FP8 or kv_cache_scheme {num_bits: 8, type: float}) that vLLM (from 0.14,
vllm-project/vllm#30785) and TensorRT-LLM serve by default. Facts read from each release's
public config.json / hf_quant_config.json (copies in aiconfigurator-core 0.12.0,
model_configs/); tests/catalog/test_catalog_blackbox38_releases.py checks each against its
config where the copy is present.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["RELEASES", "release_dtypes"]

# (weight_dtype of everything but the routed experts, moe_weight_dtype, kv_cache_dtype)
_MOE_NVFP4 = ("bf16", "fp4", "fp8")  # attention excluded, experts NVFP4, FP8 KV
_NVFP4 = ("fp4", None, "fp8")  # attention quantized too (o_proj in NVFP4), FP8 KV
_FP8 = ("fp8", None, "fp8")  # FP8 weights with FP8 KV scales

# lower-case HF id -> dtypes. Keys are whole ids (org included): another org's "-NVFP4" build
# (compressed-tensors, RedHatAI) may quantize other parts, and keeps the generic suffix rule.
RELEASES: dict[str, tuple[str, str | None, str]] = {
    # config.json quantization_config: quant_algo NVFP4, `ignore` / exclude_modules cover
    # every layer's attention, kv_cache_scheme 8-bit float
    "nvidia/glm-5-nvfp4": _MOE_NVFP4,  # hf_quant_config.json: kv_cache_quant_algo FP8
    "nvidia/glm-5.1-nvfp4": _MOE_NVFP4,
    "nvidia/glm-5.2-nvfp4": _MOE_NVFP4,
    "nvidia/glm-5.3-nvfp4": _MOE_NVFP4,
    "nvidia/minimax-m2.5-nvfp4": _MOE_NVFP4,
    "nvidia/minimax-m2.7-nvfp4": _MOE_NVFP4,
    "nvidia/qwen3.5-122b-a10b-nvfp4": _MOE_NVFP4,
    "nvidia/qwen3.5-397b-a17b-nvfp4": _MOE_NVFP4,
    "nvidia/gemma-4-26b-a4b-nvfp4": _MOE_NVFP4,
    "nvidia/kimi-k2.5-nvfp4": _MOE_NVFP4,
    # hf_quant_config.json: quant_algo NVFP4 on attention too, kv_cache_quant_algo FP8
    "nvidia/deepseek-v3.1-nvfp4": _NVFP4,
    "nvidia/deepseek-v3.2-nvfp4": _NVFP4,
    "nvidia/qwen3-235b-a22b-nvfp4": _NVFP4,
    "nvidia/nvidia-nemotron-3-nano-30b-a3b-nvfp4": _NVFP4,
    "nvidia/nvidia-nemotron-3-ultra-550b-a55b-nvfp4": _NVFP4,
    "nvidia/gemma-4-31b-it-nvfp4": _NVFP4,  # config.json: kv_cache_scheme 8-bit float
    # quant_algo FP8 with kv_cache_quant_algo FP8 (hf_quant_config.json) or
    # kv_cache_scheme "FP8" (Qwen3-32B-FP8-Static-PerTensor config.json)
    "nvidia/llama-3.1-70b-instruct-fp8": _FP8,
    "nvidia/nvidia-nemotron-3-ultra-550b-a55b-fp8": _FP8,
    "qwen/qwen3-32b-fp8-static-pertensor": _FP8,
}


def release_dtypes(name: str, has_moe: bool) -> dict[str, Any] | None:
    """ModelSpec fields of a listed release (an HF id, any letter case), else None. A dense
    model takes the experts' dtype for all its weights (it has no experts to keep apart).
    A bare "-NVFP4" name (no org: `GLM-5-NVFP4`) reads as NVIDIA's release of that name:
    NVFP4 is NVIDIA's format and its ModelOpt exports are the releases that name refers to;
    other orgs' builds are told apart by giving their full id."""
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    found = RELEASES.get(key)
    if found is None and "/" not in key and key.endswith("-nvfp4"):
        found = RELEASES.get("nvidia/" + key)
    if found is None:
        return None
    rest, experts, kv = found
    if experts is not None and not has_moe:
        rest, experts = experts, None
    return {"weight_dtype": rest, "moe_weight_dtype": experts, "kv_cache_dtype": kv}
