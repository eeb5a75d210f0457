"""Readers for families whose attention layers differ by kind: Gemma 4 and MiMo-V2 (window
layers with their own head geometry, ModelSpec.sliding_attn) and MiniMax-M3 (top-k sparse
GQA layers behind an indexer, ModelSpec.index)."""

from __future__ import annotations

from typing import Any

from pdplan.catalog.hf_common import common_fields, gqa_fields
from pdplan.catalog.model_spec import AttnGeom, IndexSpec, ModelSpec, MoESpec

__all__ = ["gemma_defaults", "read_gemma4", "read_mimo_v2", "read_minimax_m3"]


# What transformers' Gemma2Config / Gemma3TextConfig assume when a config.json leaves a key
# out (the hub's Gemma 2 files carry no layer_types; Gemma 3 4B-27B omit vocab_size):
# model_type -> (vocab_size, max_position_embeddings, sliding_window_pattern)
_GEMMA_DEFAULTS = {"gemma2": (256_000, 8192, 2), "gemma3_text": (262_208, 131_072, 6)}


def gemma_defaults(t: dict[str, Any]) -> dict[str, Any]:
    """Fill a Gemma 2 / 3 text config's omitted keys as transformers does: tied embeddings,
    its vocab and context, and layer_types from the window pattern (Gemma2Config: layer i
    slides when i is even; Gemma3TextConfig: every sliding_window_pattern-th layer is
    global, "sliding_attention" if (i + 1) % pattern else "full_attention")."""
    mt = str(t.get("model_type") or "")
    mt = "gemma3_text" if mt == "gemma3" else mt
    if mt not in _GEMMA_DEFAULTS:
        return t
    vocab, ctx, pattern = _GEMMA_DEFAULTS[mt]
    out = dict(t)
    out.setdefault("tie_word_embeddings", True)
    out.setdefault("vocab_size", vocab)
    out.setdefault("max_position_embeddings", ctx)
    out.setdefault("sliding_window", 4096)
    every = int(out.get("sliding_window_pattern") or pattern)
    n = out.get("num_hidden_layers")
    if out.get("layer_types") is None and isinstance(n, int) and n > 0:
        out["layer_types"] = [
            "sliding_attention" if (i + 1) % every else "full_attention" for i in range(n)
        ]
    return out


def _gemma_kinds(r: Any, n: int) -> tuple[str, ...]:
    raw = r.opt("layer_types")
    table = {"sliding_attention": "sliding", "full_attention": "full"}
    if not isinstance(raw, list) or len(raw) != n or any(x not in table for x in raw):
        raise r.fail(f"layer_types must give sliding_attention / full_attention for {n} layers")
    return tuple(table[x] for x in raw)


def _gemma_moe(r: Any) -> MoESpec | None:
    """Gemma 4 MoE layers run the dense MLP beside the routed experts: a shared expert of
    intermediate_size (transformers Gemma4 decoder layer: mlp + moe block; the 26B-A4B card's
    25.2B total / 3.8B active hold only with it counted)."""
    if not r.opt("enable_moe_block"):
        return None
    return MoESpec(
        num_experts=int(r.req("num_experts")),
        experts_per_token=int(r.req("top_k_experts")),
        expert_intermediate_size=int(r.req("moe_intermediate_size")),
        num_shared_experts=1,
        shared_intermediate_size=int(r.req("intermediate_size")),
    )


def read_gemma4(
    r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """Gemma 4: window layers of head_dim with num_key_value_heads, global layers of
    global_head_dim whose one projection serves as K and V (attention_k_eq_v) with
    num_global_key_value_heads (transformers Gemma4 attention: use_alternative_attention)."""
    for key, what in (
        ("hidden_size_per_layer_input", "per-layer embeddings (Gemma 4 E2B / E4B)"),
        ("num_kv_shared_layers", "KV shared across layers (Gemma 4 E2B / E4B)"),
    ):
        if r.opt(key, default=0):
            raise r.fail(f"unsupported {what} ({key})")
    n, h = int(r.req("num_hidden_layers")), int(r.req("hidden_size"))
    heads, kv = int(r.req("num_attention_heads")), int(r.req("num_key_value_heads"))
    hd = int(r.req("head_dim"))
    k_eq_v = bool(r.opt("attention_k_eq_v", default=False))
    g_hd = int(r.opt("global_head_dim", default=hd))
    g_kv = int(r.opt("num_global_key_value_heads", default=kv)) if k_eq_v else kv
    moe = _gemma_moe(r)
    fields: dict[str, Any] = {
        "hidden_size": h,
        "num_layers": n,
        "num_heads": heads,
        "num_kv_heads": g_kv,
        "head_dim": g_hd,
        "k_eq_v": k_eq_v,
        "sliding_attn": AttnGeom(heads, kv, hd, hd),
        "intermediate_size": 0 if moe else int(r.req("intermediate_size")),
        "layer_types": _gemma_kinds(r, n),
        "sliding_window": int(r.req("sliding_window")),
        "moe": moe,
    }
    common = common_fields(r, quant, name, hf_id, arch)
    common["tie_word_embeddings"] = bool(r.opt("tie_word_embeddings", default=True))
    r.check()
    return ModelSpec(**fields, **common)


def _listed_moe(r: Any, n: int) -> MoESpec:
    """MoE on the layers moe_layer_freq flags (a 0/1 list per layer), shared experts of
    shared_intermediate_size (else moe_intermediate_size) wide (MiMo-V2, MiniMax-M3)."""
    freq = r.opt("moe_layer_freq")
    ids = tuple(i for i, f in enumerate(freq[:n]) if f) if isinstance(freq, list) else None
    n_sh = int(r.opt("n_shared_experts", default=0) or 0)
    width = int(r.req("moe_intermediate_size"))
    shared = int(r.opt("shared_intermediate_size", default=width)) if n_sh else 0
    return MoESpec(
        num_experts=int(r.req("num_local_experts", "n_routed_experts")),
        experts_per_token=int(r.req("num_experts_per_tok")),
        expert_intermediate_size=width,
        num_shared_experts=n_sh,
        shared_intermediate_size=shared,
        moe_layer_ids=ids,
    )


def read_mimo_v2(
    r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """MiMo-V2-Flash: hybrid_layer_pattern 0 = full attention, 1 = window attention with its
    own swa_* head counts; Q/K heads of head_dim, V heads of v_head_dim; MoE where
    moe_layer_freq says so, a dense SwiGLU of intermediate_size elsewhere."""
    n, h = int(r.req("num_hidden_layers")), int(r.req("hidden_size"))
    pat = r.opt("hybrid_layer_pattern")
    if not isinstance(pat, list) or len(pat) != n or any(x not in (0, 1) for x in pat):
        raise r.fail(f"hybrid_layer_pattern must give 0 (full) or 1 (window) for {n} layers")
    swa = AttnGeom(
        int(r.req("swa_num_attention_heads")),
        int(r.req("swa_num_key_value_heads")),
        int(r.req("swa_head_dim")),
        int(r.req("swa_v_head_dim")),
    )
    moe = _listed_moe(r, n)
    fields: dict[str, Any] = {
        **gqa_fields(r, n, h),
        "v_head_dim": int(r.req("v_head_dim")),
        "sliding_attn": swa,
        "intermediate_size": int(r.req("intermediate_size")),
        "layer_types": tuple("sliding" if x else "full" for x in pat),
        "sliding_window": int(r.req("sliding_window", "sliding_window_size")),
        "moe": moe,
    }
    common = common_fields(r, quant, name, hf_id, arch)
    r.check()
    return ModelSpec(**fields, **common)


def _m3_index(r: Any, n: int) -> tuple[tuple[str, ...], IndexSpec]:
    """Sparse layers from sparse_attention_config.sparse_attention_freq; each query reads its
    top sparse_topk_blocks blocks of sparse_block_size keys (the local block counts in that
    budget, MiniMax-M3 MSA FLOPs accounting)."""
    cfg = r.opt("sparse_attention_config")
    if not isinstance(cfg, dict):
        raise r.fail("sparse_attention_config must be an object")
    freq = cfg.get("sparse_attention_freq") or [1] * n
    if not cfg.get("use_sparse_attention", True):
        freq = [0] * n
    if len(freq) < n:
        raise r.fail(f"sparse_attention_freq must give a flag for each of the {n} layers")
    index = IndexSpec(
        index_n_heads=int(cfg.get("sparse_num_index_heads", 0)),
        index_head_dim=int(cfg.get("sparse_index_dim", 0)),
        index_topk=int(cfg.get("sparse_topk_blocks", 0)) * int(cfg.get("sparse_block_size", 0)),
    )
    return tuple("sparse" if f else "full" for f in freq[:n]), index


def read_minimax_m3(
    r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """MiniMax-M3: GQA; its first layers dense attention + a dense FFN of
    dense_intermediate_size, the rest top-k sparse attention + MoE with one shared expert."""
    n, h = int(r.req("num_hidden_layers")), int(r.req("hidden_size"))
    kinds, index = _m3_index(r, n)
    moe = _listed_moe(r, n)
    fields: dict[str, Any] = {
        **gqa_fields(r, n, h),
        "intermediate_size": int(r.req("dense_intermediate_size", "intermediate_size")),
        "layer_types": kinds,
        "moe": moe,
        "index": index,
        "attn_output_gate": bool(r.opt("attention_output_gate", default=False)),
    }
    common = common_fields(r, quant, name, hf_id, arch)
    r.check()
    return ModelSpec(**fields, **common)
