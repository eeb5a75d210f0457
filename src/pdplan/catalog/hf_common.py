"""ModelSpec fields every config.json family reads the same way (family readers share it)."""

from __future__ import annotations

from typing import Any

from pdplan.catalog.hf_quant import weight_dtype_from_config

__all__ = ["common_fields", "gqa_fields"]


def common_fields(r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str) -> dict:
    """ModelSpec fields every family shares (read after the family's own fields)."""
    return {
        "name": name,
        "hf_id": hf_id,
        "architecture": arch,
        "model_type": str(r.opt("model_type", default="")),
        "vocab_size": int(r.req("vocab_size")),
        "tie_word_embeddings": bool(r.opt("tie_word_embeddings", default=False)),
        "weight_dtype": weight_dtype_from_config(quant, r.opt("torch_dtype", "dtype"), r.fail),
        "max_position_embeddings": int(r.opt("max_position_embeddings", default=0)),
        "source": f"{hf_id} config.json" if hf_id else "config.json",
        "num_mtp_layers": int(r.opt("num_nextn_predict_layers", default=0)),
    }


def gqa_fields(r: Any, n: int, h: int) -> dict[str, int]:
    """The GQA shape fields of configs that name all of them (no defaults to derive)."""
    return {
        "hidden_size": h,
        "num_layers": n,
        "num_heads": int(r.req("num_attention_heads")),
        "num_kv_heads": int(r.req("num_key_value_heads")),
        "head_dim": int(r.req("head_dim")),
    }
