"""Refuse config.json numbers no model can have (a negative width, 0 heads, 32.5 layers, KV heads
that do not divide the query heads) before any reader turns them into a ModelSpec.

Only the truly impossible is refused: 0 stays allowed wherever the readers (and transformers)
read it as "none" (q_lora_rank 0 = full-rank Q, num_experts 0 = dense, n_shared_experts 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pdplan.errors import InputError

__all__ = ["check_config_numbers", "whole_number_problem"]

# config.json key -> smallest value it may take (unitless counts, or widths in elements).
# 1: a size or count without which the layer cannot exist; 0: a count or width where 0 means
# "none" to the readers in catalog/hf_*.py. Checked wherever the key is present and not null.
_MIN: dict[str, int] = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "vocab_size"), 1),
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer"), 1),
    **dict.fromkeys(("num_attention_heads", "n_head", "swa_num_attention_heads"), 1),
    **dict.fromkeys(("num_key_value_heads", "num_kv_heads", "num_global_key_value_heads"), 1),
    **dict.fromkeys(("swa_num_key_value_heads", "head_dim", "attention_head_dim"), 1),
    **dict.fromkeys(("global_head_dim", "swa_head_dim", "swa_v_head_dim", "v_head_dim"), 1),
    **dict.fromkeys(("sliding_window", "sliding_window_size", "attention_chunk_size"), 1),
    **dict.fromkeys(("max_position_embeddings", "full_attention_interval", "kv_lora_rank"), 1),
    **dict.fromkeys(("q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"), 0),
    **dict.fromkeys(("index_n_heads", "index_head_dim", "index_topk", "max_window_layers"), 0),
    **dict.fromkeys(("intermediate_size", "moe_intermediate_size", "dense_intermediate_size"), 0),
    **dict.fromkeys(("intermediate_size_mlp", "shared_expert_intermediate_size"), 0),
    **dict.fromkeys(("shared_intermediate_size", "share_expert_dim"), 0),
    **dict.fromkeys(("moe_shared_expert_intermediate_size", "moe_latent_size"), 0),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts"), 0),
    **dict.fromkeys(("num_experts_per_tok", "experts_per_token", "num_experts_per_token"), 0),
    **dict.fromkeys(("top_k_experts", "n_shared_experts", "num_shared_experts"), 0),
    **dict.fromkeys(("first_k_dense_replace", "decoder_sparse_step"), 0),
    **dict.fromkeys(("interleave_moe_layer_step", "routed_expert_hidden_size"), 0),
    **dict.fromkeys(("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules"), 0),
    **dict.fromkeys(("linear_num_key_heads", "linear_num_value_heads"), 1),
    **dict.fromkeys(("linear_key_head_dim", "linear_value_head_dim"), 1),
    **dict.fromkeys(("linear_conv_kernel_dim", "conv_kernel", "n_groups"), 1),
    **dict.fromkeys(("mamba_num_heads", "mamba_head_dim", "ssm_state_size"), 1),
    **dict.fromkeys(("o_lora_rank", "o_groups", "hc_mult"), 1),
}

# config.json key -> largest value it may take. The deepest released LLMs have 126 (Llama 3.1
# 405B) and 118 (Nemotron-H 56B) layers; 10,000 is far past any real model and keeps the
# per-layer tables the readers build (one entry per layer) from exhausting memory.
_MAX: dict[str, int] = dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer"), 10_000)

# the same for keys of nested objects (Kimi linear_attn_config, MiniMax-M3 sparse config)
_NESTED_MIN: dict[str, dict[str, int]] = {
    "linear_attn_config": {"num_heads": 1, "head_dim": 1, "short_conv_kernel_size": 1},
    "sparse_attention_config": dict.fromkeys(
        ("sparse_num_index_heads", "sparse_index_dim", "sparse_topk_blocks", "sparse_block_size"),
        0,
    ),
}

_EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts")
_TOP_K = ("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "top_k_experts")


def whole_number_problem(key: str, value: Any, minimum: int = 1) -> str | None:
    """Why `value` cannot be the whole number >= `minimum` that `key` needs, or None if it can
    (an integral float such as 32.0 is accepted; bools and strings are not)."""
    ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if ok and not isinstance(value, bool) and value >= minimum:
        return None
    bound = "> 0" if minimum == 1 else f">= {minimum}"
    return f"{key} must be a whole number {bound}, got {value!r}"


def _first(t: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, int] | None:
    """(key, value) of the first of `names` set in `t`, None when none is."""
    for n in names:
        if t.get(n) is not None:
            return n, int(t[n])
    return None


def _head_problems(t: Mapping[str, Any]) -> list[str]:
    """GQA: each KV head serves a whole group of query heads, so the KV head count divides the
    query head count and cannot exceed it (transformers repeat_kv: n_heads // n_kv_heads)."""
    out = []
    for heads, kvs in (
        (("num_attention_heads", "n_head"), ("num_key_value_heads", "num_kv_heads")),
        (("num_attention_heads",), ("num_global_key_value_heads",)),
        (("swa_num_attention_heads",), ("swa_num_key_value_heads",)),
        # Gated DeltaNet: value heads grouped over key heads (Qwen3-Next num_v_heads // num_k_heads)
        (("linear_num_value_heads",), ("linear_num_key_heads",)),
        # Mamba2: the heads are split evenly over the B/C groups (mamba_ssm nheads % ngroups == 0)
        (("mamba_num_heads",), ("n_groups",)),
    ):
        q, kv = _first(t, heads), _first(t, kvs)
        if q is None or kv is None:
            continue
        if kv[1] > q[1]:
            out.append(f"{kv[0]} {kv[1]} cannot exceed {q[0]} {q[1]}")
        elif q[1] % kv[1]:
            out.append(f"{kv[0]} {kv[1]} does not divide {q[0]} {q[1]}")
    return out


def _relation_problems(t: Mapping[str, Any]) -> list[str]:
    """Impossible combinations of individually valid numbers."""
    out = _head_problems(t)
    experts, top_k = _first(t, _EXPERTS), _first(t, _TOP_K)
    width = _first(t, ("moe_intermediate_size", "intermediate_size"))  # expert FFN width
    if experts and experts[1]:  # a MoE model: each token picks 1 .. all experts, of width > 0
        if top_k and top_k[1] > experts[1]:
            out.append(f"{top_k[0]} {top_k[1]} cannot exceed {experts[0]} {experts[1]}")
        elif top_k and top_k[1] < 1:
            out.append(f"{top_k[0]} must be >= 1 with {experts[0]} {experts[1]}, got 0")
        if width and width[1] < 1:
            out.append(f"{width[0]} must be > 0 with {experts[0]} {experts[1]}, got 0")
    layers, dense = _first(t, ("num_hidden_layers",)), _first(t, ("first_k_dense_replace",))
    if layers and dense and dense[1] > layers[1]:  # DeepSeek: the first k layers are dense
        out.append(f"first_k_dense_replace {dense[1]} cannot exceed num_hidden_layers {layers[1]}")
    h, heads = _first(t, ("hidden_size", "d_model", "n_embd")), _first(t, ("num_attention_heads",))
    explicit = _first(t, ("head_dim", "attention_head_dim", "kv_lora_rank"))
    if h and heads and explicit is None and h[1] < heads[1]:  # head_dim = hidden // heads = 0
        out.append(f"{h[0]} {h[1]} < {heads[0]} {heads[1]} gives head_dim 0 (no head_dim given)")
    return out


def check_config_numbers(t: Mapping[str, Any], where: str) -> None:
    """Raise one InputError naming `where` and every impossible number in config keys `t`."""
    out = [
        p
        for key, low in _MIN.items()
        if t.get(key) is not None and (p := whole_number_problem(key, t[key], low))
    ]
    for outer, table in _NESTED_MIN.items():
        inner = t.get(outer)
        if isinstance(inner, Mapping):
            out += [
                p
                for key, low in table.items()
                if inner.get(key) is not None
                and (p := whole_number_problem(f"{outer}.{key}", inner[key], low))
            ]
    out += [
        f"{key} {t[key]} is more than any model has (at most {high:,})"
        for key, high in _MAX.items()
        if isinstance(t.get(key), (int, float)) and t[key] > high
    ]
    out += _quant_problems(t.get("quantization_config"))
    if not out:  # relations compare numbers already known to be whole and in range
        out = _relation_problems(t)
    if out:
        raise InputError("; ".join(out), path=where)


def _quant_problems(quant: Any) -> list[str]:
    """quantization_config must be an object, and its compressed-tensors / ModelOpt
    config_groups' weight widths (num_bits) whole numbers."""
    if not quant:  # absent, null or empty: not quantised
        return []
    if not isinstance(quant, Mapping):
        return [f"quantization_config must be an object, got {type(quant).__name__} {quant!r}"]
    groups = quant.get("config_groups")
    if groups is None:
        return []
    if not isinstance(groups, Mapping):
        return [f"quantization_config.config_groups must be an object, got {groups!r}"]
    out = []
    for name, g in groups.items():
        w = g.get("weights") if isinstance(g, Mapping) else None
        bits = w.get("num_bits") if isinstance(w, Mapping) else None
        key = f"quantization_config.config_groups.{name}.weights.num_bits"
        if bits is not None and (p := whole_number_problem(key, bits)):
            out.append(p)
    return out
