"""Map a checkpoint's quantization_config / hf_quant_config to its weight dtype names."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Any

from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError

__all__ = [
    "attention_unquantized",
    "kv_dtype_from_config",
    "split_expert_dtype",
    "weight_dtype_from_config",
]

# quant_method / quant_algo spellings -> our dtype names (DTYPE_BYTES keys in model_spec.py)
_METHODS: dict[str, str] = {
    "fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "mxfp4": "mxfp4",
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


# module-name prefixes of the decoder layers in the checkpoints we read (Llama-style, Qwen3.5's
# multimodal wrapper, Kimi-K2.5's, Nemotron-H's backbone)
_LAYER_PREFIXES = ("model.layers", "model.language_model.layers", "language_model.model.layers")
# a layer's attention output projection under its names (full, linear attention)
_ATTN_OUT = ("self_attn.o_proj", "linear_attn.out_proj", "self_attn.out_proj")


def attention_unquantized(quant: Mapping[str, Any] | None, num_layers: int) -> bool:
    """True when the checkpoint's quantization leaves every layer's attention in its base
    dtype: the config's modules_to_not_convert (gpt-oss: "model.layers.*.self_attn"), ignore
    (compressed-tensors regexes "re:...", ModelOpt globs "model.layers.0.self_attn*") or
    exclude_modules (ModelOpt hf_quant_config) match the attention output projection of
    every layer (DeepSeek-V3.1-NVFP4 quantizes o_proj, so its attention counts as FP4)."""
    q = quant or {}
    pats = [
        str(p)
        for key in ("modules_to_not_convert", "ignore", "exclude_modules")
        for p in (q.get(key) or ())
    ]
    if not pats or num_layers < 1:
        return False
    return all(_layer_excluded(pats, i) for i in range(num_layers))


def _layer_excluded(pats: list[str], i: int) -> bool:
    names = [f"{pre}.{i}.{mod}" for pre in _LAYER_PREFIXES for mod in _ATTN_OUT]
    return any(_matches(p, n) for p in pats for n in names)


def _matches(pattern: str, name: str) -> bool:
    """A module pattern names `name` or one of its parents (a module's weights include its
    children's: "model.layers.*.self_attn" covers its o_proj)."""
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    parts = name.split(".")
    return any(fnmatchcase(".".join(parts[:k]), pattern) for k in range(1, len(parts) + 1))


def split_expert_dtype(
    spec: ModelSpec,
    quant: Mapping[str, Any] | None,
    torch_dtype: str | None,
    fail: Callable[[str], ConfigError],
) -> ModelSpec:
    """An MoE checkpoint quantized with its attention left out (gpt-oss MXFP4, ModelOpt NVFP4
    releases of MiniMax / GLM / Kimi / Qwen3.5) stores the routed experts in the quantized
    dtype and the rest in torch_dtype: gpt-oss-120b's BF16 attention is 1.9 GB (0.5 GB read as
    FP4). Shared experts and dense layers go with the rest, though some releases quantize them
    too (Kimi-K2.5-NVFP4): a few GB over against the attention's under-count."""
    if spec.moe is not None and (mixed := _mixed_precision(quant)):
        return replace(spec, weight_dtype=mixed[0], moe_weight_dtype=mixed[1])
    if spec.moe is None or spec.moe_weight_dtype or not quant:
        return spec
    if not attention_unquantized(quant, spec.num_layers):
        return spec
    base = weight_dtype_from_config(None, torch_dtype, fail)
    if base == spec.weight_dtype:
        return spec
    return replace(spec, weight_dtype=base, moe_weight_dtype=spec.weight_dtype)


def _mixed_precision(quant: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(rest, experts) dtypes of a ModelOpt MIXED_PRECISION checkpoint that quantizes only
    the routed experts (moe_quant_algo) and keeps the rest in quant_method's format: nvidia/
    DeepSeek-V4-*-NVFP4 (NVFP4 experts, the base release's FP8 blocks elsewhere). Its
    config.json still carries the base's expert_dtype "fp4" (MXFP4), which the experts no
    longer are. None for any other checkpoint."""
    q = quant or {}
    experts = _METHODS.get(str(q.get("moe_quant_algo") or "").lower())
    rest = _METHODS.get(str(q.get("quant_method") or "").lower())
    return (rest, experts) if experts and rest else None


def kv_dtype_from_config(quant: Mapping[str, Any] | None) -> str | None:
    """The KV-cache dtype a checkpoint asks for, or None (the model's dtype): ModelOpt's
    hf_quant_config `kv_cache_quant_algo: FP8` (nvidia/*-NVFP4, *-FP8 exports) or a
    compressed-tensors / ModelOpt `kv_cache_scheme` of 8-bit floats ({num_bits: 8, type:
    float}; e.g. nvidia/MiniMax-M2.5-NVFP4's config.json). Engines serve it so when no KV dtype
    is given: vLLM from 0.14 (vllm-project/vllm#30785), TensorRT-LLM from the checkpoint's
    quant config."""
    if not quant:
        return None
    algo = quant.get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo.lower() in ("fp8", "fp8_e4m3"):
        return "fp8"
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, str) and scheme.lower() in ("fp8", "fp8_e4m3"):
        return "fp8"
    if isinstance(scheme, Mapping) and scheme.get("num_bits") == 8:
        if str(scheme.get("type", "float")).lower() == "float":
            return "fp8"
    return None
