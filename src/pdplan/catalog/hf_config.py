"""Read a Hugging Face config.json into a ModelSpec (GQA, MLA, MoE, sliding and linear layers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pdplan.catalog.hf_geom import gemma_defaults
from pdplan.catalog.hf_load import hf_id_from_path, load_config_dict, side_quant, text_config
from pdplan.catalog.hf_quant import (
    kv_dtype_from_config,
    split_expert_dtype,
    weight_dtype_from_config,
)
from pdplan.catalog.hf_validate import check_config_numbers
from pdplan.catalog.model_spec import LinearAttnSpec, MLASpec, ModelSpec, MoESpec
from pdplan.errors import ConfigError

__all__ = ["load_config_dict", "model_from_hf_config"]

# Config keys that mark a layer structure ModelSpec cannot describe; reading such a config
# with the generic rules would silently give wrong parameter or KV numbers, so we refuse.
# (Families with a reader of their own, catalog/hf_families.py, are dispatched before this.)
_UNSUPPORTED: dict[str, str] = {
    "hybrid_override_pattern": "Mamba/attention hybrid layers (Nemotron-H)",
    "layers_block_type": "Mamba/attention hybrid layers (Nemotron-H)",
    "ssm_state_size": "Mamba/SSM layers",
    "block_configs": "per-layer NAS blocks (DeciLM / Nemotron-NAS)",
    "compress_ratios": "compressed sparse attention (DeepSeek-V4)",
    "linear_attn_config": "Kimi linear attention",
    "hybrid_layer_pattern": "per-layer sliding-window head counts (MiMo-V2)",
    "global_head_dim": "per-layer head dims and K=V attention (Gemma 4)",
    "interleave_moe_layer_step": "chunked attention with interleaved MoE (Llama 4)",
    "sparse_attention_config": "per-layer sparse attention (MiniMax-M3)",
}

# HF layer_types spellings -> ModelSpec kinds ("full", "sliding", "linear")
_LAYER_KINDS: dict[str, str] = {
    "full_attention": "full",
    "attention": "full",
    "global": "full",
    "deepseek_sparse_attention": "full",  # GLM-5.x DSA: full MLA cache, sparse read
    "sliding_attention": "sliding",
    "local": "sliding",
    "linear_attention": "linear",
}

_MISSING = object()


def _pick(t: Mapping[str, Any], *names: str, default: Any = _MISSING) -> Any:
    """The first of `names` present with a non-null value, else `default`."""
    for n in names:
        if t.get(n) is not None:
            return t[n]
    return default


class _Reader:
    """Collects required fields and reports every missing one in a single ConfigError."""

    def __init__(self, t: Mapping[str, Any], where: str, arch: str) -> None:
        self.t, self.where, self.arch = t, where, arch
        self.missing: list[str] = []

    def req(self, *names: str) -> Any:
        v = _pick(self.t, *names)
        if v is _MISSING:
            self.missing.append(names[0])
            return 0
        return v

    def opt(self, *names: str, default: Any = None) -> Any:
        return _pick(self.t, *names, default=default)

    def fail(self, why: str) -> ConfigError:
        return ConfigError(f"{self.where}: cannot read architecture {self.arch}: {why}")

    def check(self) -> None:
        if self.missing:
            raise self.fail("missing " + ", ".join(dict.fromkeys(self.missing)))


def _layer_types(r: _Reader, n_layers: int) -> tuple[str, ...]:
    """Per-layer kinds from `layer_types`, or from sliding_window / use_sliding_window rules."""
    raw = r.opt("layer_types")
    if isinstance(raw, list) and raw:
        bad = sorted({str(x) for x in raw if x not in _LAYER_KINDS})
        if bad:
            raise r.fail("unknown layer_types " + ", ".join(bad))
        kinds = tuple(_LAYER_KINDS[x] for x in raw)
        if len(kinds) != n_layers:
            raise r.fail(f"{len(kinds)} layer_types for num_hidden_layers={n_layers}")
        if "sliding" in kinds:
            r.req("sliding_window")
        return kinds
    interval = r.opt("full_attention_interval")
    if interval:  # Qwen3-Next: every interval-th layer full attention, the rest Gated DeltaNet
        return tuple("full" if (i + 1) % int(interval) == 0 else "linear" for i in range(n_layers))
    window = r.opt("sliding_window")
    use = r.opt("use_sliding_window")
    mistral = r.opt("model_type") == "mistral" and use is not False
    if window is None or not (use is True or mistral):
        return ()  # Mixtral / Qwen3 carry sliding_window null or use_sliding_window false
    # Qwen2-style: layers from max_window_layers on use the window (transformers Qwen2Config)
    first = int(r.opt("max_window_layers", default=0)) if use is True else 0
    return tuple("sliding" if i >= first else "full" for i in range(n_layers))


def _moe_layer_ids(r: _Reader, n_layers: int) -> tuple[int, ...] | None:
    """Explicit MoE layer indices for irregular patterns, None when first_k/freq suffice."""
    freq = r.opt("moe_layer_freq")
    if isinstance(freq, list):
        return tuple(i for i, f in enumerate(freq[:n_layers]) if f)
    step = int(r.opt("decoder_sparse_step", default=1) or 1)
    dense_only = set(r.opt("mlp_only_layers", default=[]) or [])
    if step <= 1 and not dense_only:
        return None
    # Qwen2/3-MoE: MoE when layer not in mlp_only_layers and (i+1) % decoder_sparse_step == 0
    return tuple(i for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0)


def _moe(r: _Reader, n_layers: int) -> MoESpec | None:
    n_exp = r.opt("num_experts", "num_local_experts", "n_routed_experts")
    if not n_exp:
        return None
    width = r.req("moe_intermediate_size", "intermediate_size")  # Mixtral/gpt-oss/MiniMax: expert
    n_sh = r.opt("n_shared_experts", "num_shared_experts")
    sh_w = r.opt("shared_expert_intermediate_size", "shared_intermediate_size", "share_expert_dim")
    if n_sh is None:
        n_sh = 1 if sh_w else 0  # Qwen names only the width of its single shared expert
    # DeepSeek: one shared MLP of moe_intermediate_size * n_shared_experts = n copies of width
    sh_w = sh_w if sh_w is not None else (width if n_sh else 0)
    freq = r.opt("moe_layer_freq", default=1)
    return MoESpec(
        num_experts=int(n_exp),
        experts_per_token=int(
            r.req("num_experts_per_tok", "experts_per_token", "num_experts_per_token")
        ),
        expert_intermediate_size=int(width),
        num_shared_experts=int(n_sh) if sh_w else 0,
        shared_intermediate_size=int(sh_w) if n_sh else 0,
        first_dense_layers=int(r.opt("first_k_dense_replace", default=0)),
        layer_freq=int(freq) if isinstance(freq, int) and freq > 0 else 1,
        moe_layer_ids=_moe_layer_ids(r, n_layers),
    )


def _mla(r: _Reader) -> MLASpec | None:
    if r.opt("kv_lora_rank") is None:
        return None
    q_lora = r.opt("q_lora_rank")
    return MLASpec(
        q_lora_rank=int(q_lora) if q_lora else None,
        kv_lora_rank=int(r.req("kv_lora_rank")),
        qk_nope_head_dim=int(r.req("qk_nope_head_dim")),
        qk_rope_head_dim=int(r.req("qk_rope_head_dim")),
        v_head_dim=int(r.req("v_head_dim")),
        index_n_heads=int(r.opt("index_n_heads", default=0)),
        index_head_dim=int(r.opt("index_head_dim", default=0)),
        index_topk=int(r.opt("index_topk", default=0)) if r.opt("index_n_heads") else 0,
    )


def _linear(r: _Reader, kinds: tuple[str, ...]) -> LinearAttnSpec | None:
    if "linear" not in kinds:
        return None
    return LinearAttnSpec(
        num_key_heads=int(r.req("linear_num_key_heads")),
        num_value_heads=int(r.req("linear_num_value_heads")),
        key_head_dim=int(r.req("linear_key_head_dim")),
        value_head_dim=int(r.req("linear_value_head_dim")),
        conv_kernel=int(r.opt("linear_conv_kernel_dim", default=4)),
    )


def _build(
    r: _Reader, quant: dict[str, Any] | None, name: str, hf_id: str, outer_arch: str
) -> ModelSpec:
    """Read the fields shared by every family, then the MLA / MoE / linear parts."""
    h = int(r.req("hidden_size", "d_model", "n_embd"))
    n_layers = int(r.req("num_hidden_layers", "num_layers", "n_layer"))
    heads = int(r.req("num_attention_heads", "n_head"))
    mla, moe = _mla(r), _moe(r, n_layers)
    kinds = _layer_types(r, n_layers)
    lin = _linear(r, kinds)
    # none given: multi-head attention (transformers LlamaConfig: "if num_key_value_heads is None")
    kv_heads = heads if mla else int(r.opt("num_key_value_heads", "num_kv_heads", default=heads))
    head_dim = mla.qk_head_dim if mla else int(r.opt("head_dim", default=h // max(heads, 1)))
    all_moe = moe is not None and moe.first_dense_layers == 0 and moe.moe_layer_ids is None
    inter = r.opt("intermediate_size", default=0) if all_moe else r.req("intermediate_size")
    vocab = int(r.req("vocab_size"))
    r.check()
    return ModelSpec(
        name=name,
        hf_id=hf_id,
        architecture=outer_arch,
        model_type=str(r.opt("model_type", default="")),
        hidden_size=h,
        num_layers=n_layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=int(inter),
        vocab_size=vocab,
        tie_word_embeddings=bool(r.opt("tie_word_embeddings", default=False)),
        layer_types=kinds,
        sliding_window=int(r.opt("sliding_window")) if "sliding" in kinds else None,
        mla=mla,
        moe=moe,
        linear_attn=lin,
        weight_dtype=weight_dtype_from_config(quant, r.opt("torch_dtype", "dtype"), r.fail),
        max_position_embeddings=int(r.opt("max_position_embeddings", default=0)),
        source=f"{hf_id} config.json" if hf_id else "config.json",
        # Qwen3-Next gates every full-attention output (transformers Qwen3NextAttention)
        attn_output_gate=bool(
            r.opt("attn_output_gate", default=r.opt("model_type") == "qwen3_next")
        ),
        num_mtp_layers=int(
            r.opt("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", default=0)
        ),
    )


def _refuse_quant_only(d: Mapping[str, Any], p: Path) -> None:
    """A ModelOpt hf_quant_config.json ({"producer", "quantization"}: the scheme, no layer
    shapes) passed for the model's config.json: say which file to pass instead."""
    if "quantization" in d and "hidden_size" not in d and "text_config" not in d:
        stem = p.name.removesuffix("hf_quant_config.json")
        cfg = p.with_name((stem or "") + "config.json")
        raise ConfigError(
            f"{p}: this is a ModelOpt hf_quant_config.json (the quantisation scheme, no layer "
            f"shapes); pass the model's config.json ({cfg}): the quant file beside it, named "
            f"{stem}hf_quant_config.json, is read with it"
        )


def model_from_hf_config(
    path_or_dict: str | Path | Mapping[str, Any], name: str | None = None, hf_id: str | None = None
) -> ModelSpec:
    """A ModelSpec from a config.json path (file or directory) or an already-parsed dict.

    Raises InputError for an unreadable / non-JSON file or impossible numbers (hf_validate.py),
    ConfigError (naming the file, architecture and every missing field) for one it cannot read.
    """
    side: dict[str, Any] | None = None
    if isinstance(path_or_dict, Mapping):
        d, where = dict(path_or_dict), "config.json"
        hf_id = hf_id or str(d.get("_name_or_path") or "")
    else:
        p = Path(path_or_dict)
        p = p / "config.json" if p.is_dir() else p
        d, where = load_config_dict(p), str(p)
        _refuse_quant_only(d, p)
        hf_id, side = hf_id or hf_id_from_path(p), side_quant(p)
    archs = d.get("architectures") or [d.get("model_type") or "unknown"]
    arch = str(archs[0]) if isinstance(archs, list) and archs else str(archs)
    t = gemma_defaults(text_config(d))  # transformers' defaults for keys Gemma 2 / 3 omit
    check_config_numbers(t, where)  # InputError: negative widths, KV heads that do not divide
    r = _Reader(t, where, arch)
    quant = t.get("quantization_config") or side
    from pdplan.catalog.hf_families import FAMILY_READERS  # its readers import _Reader

    family = FAMILY_READERS.get(str(t.get("model_type") or ""))
    if family is None:
        for key, what in _UNSUPPORTED.items():
            if t.get(key) is not None:
                raise r.fail(f"unsupported {what} ({key})")
    spec = (family or _build)(r, quant, name or hf_id or arch, hf_id or "", arch)
    spec = split_expert_dtype(spec, quant, r.opt("torch_dtype", "dtype"), r.fail)
    kv = kv_dtype_from_config(quant)
    return replace(spec, kv_cache_dtype=kv) if kv else spec
