"""Model lookup: built-in presets by key or HF id (-FP8 / -NVFP4 variants), or a config.json."""

from __future__ import annotations

import dataclasses
import difflib
import re
from functools import cache
from pathlib import Path
from typing import Any

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.model_names import ALIASES as _ALIASES
from pdplan.catalog.model_names import DTYPE_SUFFIXES as _DTYPE_SUFFIXES
from pdplan.catalog.model_names import FAMILY_SIZE_NOTE, PLAIN_SUFFIX, by_family_size
from pdplan.catalog.model_presets import MODEL_PRESETS
from pdplan.catalog.model_releases import release_dtypes
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

__all__ = ["get_model", "guessed_shape", "list_models", "resolve_model_name"]


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
            stripped = PLAIN_SUFFIX.sub("", base)
            base, changed = stripped, stripped != base
    return (base, dtype) if base in MODEL_PRESETS else None


def guessed_shape(spec: ModelSpec) -> str | None:
    """The warning of a spec get_model read by its name's family and size
    (model_names.by_family_size), else None."""
    return spec.source if FAMILY_SIZE_NOTE in spec.source else None


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or Path(name).is_file() or (Path(name) / "config.json").is_file()


def _missing_path(name: str) -> InputError | None:
    """The error for a name that is a path but names no config: a folder without a
    config.json, or a clear path (a .json name, or one starting with '/', '.', '~' or with
    more than one '/'; an HF id has one) that does not exist. None otherwise."""
    if not name.strip():  # Path('') is the working folder: 'no config.json in ' said nothing
        return InputError(
            "empty model name: give a catalog model (see `pdplan models`), a Hugging Face id "
            "or the path of a config.json"
        )
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
    changes: dict[str, Any] = {}
    if found is None and _missing_path(name_or_path) is None:
        found = by_family_size(name_or_path)
        if found is not None:  # said in the spec's source, which the CLI warns with
            changes["source"] = (
                f"{name_or_path} is {FAMILY_SIZE_NOTE}: read as {found[0]}'s shape (its name "
                f"carries {found[0]}'s family and size, as a fine-tune of that architecture "
                "does); give its config.json to be exact"
            )
    if found is None:  # a path that names no config says so, rather than listing the catalog
        raise _missing_path(name_or_path) or _unknown(name_or_path)
    spec = _preset(found[0])
    release = release_dtypes(name_or_path, spec.moe is not None)
    if release is not None:  # a listed release: its quant config's dtypes, part by part
        changes.update(release)
    elif found[1] and spec.moe_weight_dtype:  # a release of experts in their own dtype (gpt-oss
        changes["moe_weight_dtype"] = found[1]  # MXFP4, NVFP4): the name says the experts'
    elif found[1]:
        changes["weight_dtype"] = found[1]
    if "/" in name_or_path:
        changes["hf_id"] = name_or_path.strip()
    return dataclasses.replace(spec, **changes) if changes else spec
