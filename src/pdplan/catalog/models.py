"""Model lookup: built-in presets by key or HF id (-FP8 / -NVFP4 variants), or a config.json."""

from __future__ import annotations

import dataclasses
import difflib
import re
from functools import cache
from pathlib import Path
from typing import Any

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.model_presets import MODEL_PRESETS
from pdplan.catalog.model_spec import (
    AttnGeom,
    CompressedAttnSpec,
    IndexSpec,
    LinearAttnSpec,
    MLASpec,
    ModelSpec,
    MoESpec,
)
from pdplan.errors import ConfigError, InputError

__all__ = ["get_model", "list_models", "resolve_model_name"]

# Checkpoint-name suffixes that name a quantised copy of the same architecture -> weight dtype.
_DTYPE_SUFFIXES: dict[str, str] = {
    # AMD Quark checkpoints: MXFP4 weights with FP8 activations (amd/gpt-oss-120b-w-mxfp4-a-fp8)
    # run 4-bit weights on FP8 matrix cores; "-FP8-KV" ships FP8 weights with KV-cache scales
    "-w-mxfp4-a-fp8": "w4a8",
    "-fp8-kv": "fp8",
    "-nvfp4": "fp4",
    "-mxfp4": "mxfp4",
    "-fp4": "fp4",
    "-fp8-dynamic": "fp8",
    # FP8 with static per-tensor scales (AIConfigurator's Qwen/Qwen3-32B-FP8-Static-PerTensor,
    # RedHatAI "-FP8" / "-W8A8-FP8" builds): FP8 weights either way
    "-fp8-static-pertensor": "fp8",
    "-fp8-static": "fp8",
    "-w8a8-fp8": "fp8",
    "-fp8": "fp8",
    "-bf16": "bf16",
    "-int4": "int4",
    "-awq": "int4",
    "-w4a16": "int4",
}
# Suffixes that change only the fine-tune, not the shape (Instruct, v0.1, dated refreshes).
_PLAIN_SUFFIX = re.compile(r"-(instruct|base|chat|hf|it|thinking|preview|v\d+([._]\d+)?|\d{4})$")

# Extra spellings that normalisation alone does not reach.
_ALIASES: dict[str, str] = {
    "kimi-k2-instruct": "kimi-k2",
    "llama3.1-8b": "llama-3.1-8b",
    "llama3.1-70b": "llama-3.1-70b",
    "llama3.1-405b": "llama-3.1-405b",
    "llama3.3-70b": "llama-3.1-70b",
    "dsr1": "deepseek-r1",  # InferenceMAX's short names
    "qwen3.5-397b": "qwen3.5-397b-a17b",
    "gpt-oss": "gpt-oss-120b",
    # same architecture (identical config.json dimensions), different weights
    "llama-3.3-70b": "llama-3.1-70b",
    "deepseek-v3.1-terminus": "deepseek-v3.1",
    "deepseek-v3.2-exp": "deepseek-v3.2",
    "qwen3-coder-30b-a3b": "qwen3-30b-a3b",
    # NVIDIA's Nemotron ids carry an "NVIDIA-" prefix and a "-Base-8K" tail
    "nvidia-nemotron-3-nano-30b-a3b": "nemotron-3-nano-30b-a3b",
    "nvidia-nemotron-3-super-120b-a12b": "nemotron-3-super-120b-a12b",
    "nvidia-nemotron-3-ultra-550b-a55b": "nemotron-3-ultra-550b-a55b",
    "nvidia-nemotron-3.5-lightning-30b-a3b": "nemotron-3.5-lightning-30b-a3b",
    "nemotron-h-56b-base-8k": "nemotron-h-56b",
    "llama-3_3-nemotron-super-49b": "llama-3.3-nemotron-super-49b",
    # GLM-4.5 / 4.6 / 4.7 share one 355B-A32B config.json shape (92 layers, 160 experts)
    "glm-4.5": "glm-4.7",
    "glm-4.6": "glm-4.7",
    "kimi-k2-thinking": "kimi-k2",
    # MiniMax-M2 / M2.1 / M2.5 / M2.7 share one 230B-A10B config.json shape (62 layers,
    # 256 experts top-8, 48 query / 8 KV heads of 128; MiniMaxAI model cards)
    "minimax-m2": "minimax-m2.5",
    "minimax-m2.1": "minimax-m2.5",
    # Qwen2.5-Coder / QwQ: the Qwen2.5 shapes (model cards: same layers, heads and params;
    # config.json context 32768, QwQ-32B's 40960 differs only in the context warning)
    "qwen2.5-coder-7b": "qwen2.5-7b",
    "qwen2.5-coder-14b": "qwen2.5-14b",
    "qwen2.5-coder-32b": "qwen2.5-32b",
    "qwq-32b": "qwen2.5-32b",
    # DeepSeek-R1 distills of Qwen2.5-Math-7B / Qwen2.5-14B / -32B and Llama-3.1-8B / 3.3-70B
    # (vocab 152064 / 128256, untied); their configs say 131072 context. The 1.5B distill
    # unties its embeddings and has a preset of its own.
    "deepseek-r1-distill-qwen-7b": "qwen2.5-7b",
    "deepseek-r1-distill-qwen-14b": "qwen2.5-14b",
    "deepseek-r1-distill-qwen-32b": "qwen2.5-32b",
    "deepseek-r1-distill-llama-8b": "llama-3.1-8b",
    "deepseek-r1-distill-llama-70b": "llama-3.1-70b",
    "llama2-7b": "llama-2-7b",  # Splitwise / Sarathi spellings
    "llama2-13b": "llama-2-13b",
    "llama2-70b": "llama-2-70b",
    # Mistral-7B v0.1 slides a 4096 window on every layer; v0.2 / v0.3 do not ("mistral-7b")
    "mistral-7b-instruct-v0.1": "mistral-7b-v0.1",
    "mistral-large-instruct-2407": "mistral-large-2407",
    # Large 2411 is the same 123B "Mistral Large 2" (llama.cpp supported it without a change)
    "mistral-large-instruct-2411": "mistral-large-2407",
    "mistral-nemo": "mistral-nemo-12b",
}


@cache
def _preset(key: str) -> ModelSpec:
    """Build the ModelSpec of one preset (nested dicts -> MLASpec / MoESpec / LinearAttnSpec)."""
    d: dict[str, Any] = dict(MODEL_PRESETS[key])
    n = int(d["num_layers"])
    for src, dst in (("layer_pattern", "layer_types"), ("ffn_pattern", "ffn_types")):
        pattern = d.pop(src, None)  # a list, or one space-separated string when long
        if pattern:
            pattern = pattern.split() if isinstance(pattern, str) else pattern
            d[dst] = tuple(pattern[i % len(pattern)] for i in range(n))
    if "mla" in d:
        d["mla"] = MLASpec(**d["mla"])
    if "moe" in d:
        moe = dict(d["moe"])
        if moe.get("moe_layer_ids") is not None:
            moe["moe_layer_ids"] = tuple(moe["moe_layer_ids"])
        d["moe"] = MoESpec(**moe)
    if "linear_attn" in d:
        d["linear_attn"] = LinearAttnSpec(**d["linear_attn"])
    for part, cls in (
        ("csa", CompressedAttnSpec),
        ("sliding_attn", AttnGeom),
        ("index", IndexSpec),
    ):
        if part in d:
            d[part] = cls(**d[part])
    return ModelSpec(name=key, **d)


def list_models() -> list[str]:
    """Keys of the built-in presets, sorted."""
    return sorted(MODEL_PRESETS)


# each preset's HF id, spelled as resolve_model_name spells what it is given -> the preset
_HF_BASES: dict[str, str] = {
    re.sub(r"[\s_]+", "-", str(v["hf_id"]).strip().lower()).rsplit("/", 1)[-1]: k
    for k, v in MODEL_PRESETS.items()
    if v.get("hf_id")
}


def resolve_model_name(name: str) -> tuple[str, str | None] | None:
    """(preset key, weight dtype override or None) for a key or HF id, or None if unknown.

    "nvidia/DeepSeek-R1-NVFP4" -> ("deepseek-r1", "fp4"); "Qwen/Qwen3-235B-A22B-FP8" ->
    ("qwen3-235b-a22b", "fp8"); "meta-llama/Llama-3.1-70B-Instruct" -> ("llama-3.1-70b", None).
    """
    key = re.sub(r"[\s_]+", "-", name.strip().lower())  # "deepseek_r1", "DeepSeek R1"
    if key in MODEL_PRESETS:
        return key, None
    base = key.rsplit("/", 1)[-1].removeprefix("meta-")
    dtype: str | None = None
    changed = True
    while changed and base not in MODEL_PRESETS:
        changed = False
        if base in _HF_BASES:  # a preset's own HF id ("Llama-3_3-Nemotron-Super-49B-v1")
            base, changed = _HF_BASES[base], True
            continue
        if base in _ALIASES:
            base, changed = _ALIASES[base], True
            continue
        for suffix, dt in _DTYPE_SUFFIXES.items():
            if base.endswith(suffix):
                base, dtype, changed = base.removesuffix(suffix), dtype or dt, True
                break
        else:
            stripped = _PLAIN_SUFFIX.sub("", base)
            base, changed = stripped, stripped != base
    return (base, dtype) if base in MODEL_PRESETS else None


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or Path(name).is_file() or (Path(name) / "config.json").is_file()


def _missing_path(name: str) -> InputError | None:
    """The error for a name that is a path but names no config: a folder without a
    config.json, or a clear path (a .json name, or one starting with '/', '.', '~' or with
    more than one '/'; an HF id has one) that does not exist. None otherwise."""
    p = Path(name.strip()).expanduser()
    if p.is_dir():
        if (p / "config.json").is_file():
            return None
        jsons = sorted(p.glob("*.json"))
        pick = f"; give one of its {len(jsons)} .json files, e.g. {jsons[0]}" if jsons else ""
        return InputError(f"no config.json in {name}{pick}")
    path_like = name.endswith(".json") or name.startswith(("/", ".", "~")) or name.count("/") > 1
    if path_like and not p.exists():
        return InputError(
            "no such file or directory (a model path is a config.json or its folder)", path=name
        )
    return None


def _named_dtype(spec: ModelSpec) -> ModelSpec:
    """A config.json with no quantization block (16-bit weights) whose checkpoint name says it
    is quantised (…-NVFP4, …-FP8: ModelOpt keeps the scheme in a side hf_quant_config.json,
    absent here) takes the name's weight dtype, as the same name does in the catalog. One
    whose quantization block left its attention out (experts apart, moe_weight_dtype) has
    said its dtypes already."""
    if spec.weight_dtype not in ("bf16", "fp16") or spec.moe_weight_dtype:
        return spec
    base = re.sub(r"[\s_]+", "-", spec.hf_id.strip().lower()).rsplit("/", 1)[-1]
    for suffix, dt in _DTYPE_SUFFIXES.items():
        if base.endswith(suffix):
            return spec if dt in ("bf16", "fp16") else dataclasses.replace(spec, weight_dtype=dt)
    return spec


def _unknown(name: str) -> ConfigError:
    base = name.strip().lower().rsplit("/", 1)[-1]
    hits = difflib.get_close_matches(base, [*MODEL_PRESETS, *_ALIASES], n=6, cutoff=0.5)
    close = list(dict.fromkeys(_ALIASES.get(h, h) for h in hits))[:4]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return ConfigError(
        f"unknown model {name!r}{hint} (known: {', '.join(list_models())}); "
        "a path to a Hugging Face config.json (or its folder) also works"
    )


def get_model(name_or_path: str) -> ModelSpec:
    """A built-in preset (key or HF id, case-insensitive) or a model read from a config.json.

    A quantised checkpoint id (…-FP8, …-NVFP4) returns the base preset with that weight dtype
    (its routed experts' where the preset keeps them apart, as gpt-oss / Kimi-K2.5 releases
    quantize only them) and the given HF id; an unknown name raises ConfigError listing close
    matches.
    """
    key = name_or_path.strip().lower()
    if key in MODEL_PRESETS:
        return _preset(key)
    if name_or_path.endswith(".json") and not Path(name_or_path).expanduser().exists():
        raise _missing_path(name_or_path) or _unknown(name_or_path)
    if _looks_like_path(name_or_path):
        return _named_dtype(model_from_hf_config(name_or_path))
    found = resolve_model_name(name_or_path)
    if found is None:  # a path that names no config says so, rather than listing the catalog
        raise _missing_path(name_or_path) or _unknown(name_or_path)
    spec = _preset(found[0])
    changes: dict[str, Any] = {}
    if found[1] and spec.moe_weight_dtype:  # a release of experts in their own dtype (gpt-oss
        changes["moe_weight_dtype"] = found[1]  # MXFP4, NVFP4): the name says the experts'
    elif found[1]:
        changes["weight_dtype"] = found[1]
    if "/" in name_or_path:
        changes["hf_id"] = name_or_path.strip()
    return dataclasses.replace(spec, **changes) if changes else spec
