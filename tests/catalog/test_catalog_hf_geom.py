"""Gemma 4, MiMo-V2 and MiniMax-M3 readers: per-kind head geometry, sparse GQA, card sizes."""

from __future__ import annotations

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError

TINY_GEMMA = {
    "architectures": ["Gemma4ForConditionalGeneration"],
    "model_type": "gemma4",
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "gemma4_text",
        "hidden_size": 64,
        "num_hidden_layers": 3,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "global_head_dim": 32,
        "num_global_key_value_heads": 1,
        "attention_k_eq_v": True,
        "sliding_window": 8,
        "intermediate_size": 96,
        "vocab_size": 100,
        "dtype": "bfloat16",
    },
}


def test_gemma4_geometry_by_hand() -> None:
    m = model_from_hf_config(TINY_GEMMA)
    h = 64
    sliding = h * 4 * 16 + h * 2 * (16 + 16) + 4 * 16 * h  # q, k + v, o
    full = h * 4 * 32 + h * 1 * 32 + 4 * 32 * h  # q, one K=V projection, o
    ffn = 3 * h * 96  # GeGLU: gate, up, down
    assert m.total_params == 2 * sliding + full + 3 * ffn + 100 * h  # tied embedding
    # KV: window layers K and V of 2 x 16, the global layer one 32-wide K=V head
    assert m.kv_layer_bytes("sliding", "bf16") == 2 * 2 * 16 * 2
    assert m.kv_layer_bytes("full", "bf16") == 1 * 32 * 2
    assert m.kv_bytes(100, "bf16") == 2 * 8 * 128 + 100 * 64


def test_gemma4_per_layer_embeddings_refused() -> None:
    bad = {**TINY_GEMMA, "text_config": {**TINY_GEMMA["text_config"], "num_kv_shared_layers": 4}}
    with pytest.raises(ConfigError, match="KV shared across layers"):
        model_from_hf_config(bad)


@pytest.mark.parametrize(
    ("name", "total_b", "active_b"),
    [
        # model cards: Gemma 4 26B-A4B 25.2B / 3.8B (the dense MLP runs beside the experts),
        # Gemma 4 31B, MiMo-V2-Flash 309B / 15B, MiniMax-M3 ~428B (with its vision tower) /
        # ~23B (our active count adds the 2.5B embedding + LM head)
        ("gemma-4-26b-a4b", 25.2, 3.8),
        ("gemma-4-31b", 30.7, 30.7),
        ("mimo-v2-flash", 308.8, 15.4),
        ("minimax-m3", 426.2, 26.0),
    ],
)
def test_card_sizes(name: str, total_b: float, active_b: float) -> None:
    m = get_model(name)
    assert m.total_params / 1e9 == pytest.approx(total_b, abs=0.15)
    assert m.active_params / 1e9 == pytest.approx(active_b, abs=0.15)


def test_mimo_window_layers_have_their_own_kv_heads() -> None:
    m = get_model("mimo-v2-flash")
    assert m.layer_types[:2] == ("full", "sliding") and m.sliding_window == 128
    full, swa = m.geom("full"), m.geom("sliding")
    assert (full.num_kv_heads, swa.num_kv_heads) == (4, 8)
    assert (full.head_dim, full.v_head_dim) == (192, 128)
    assert m.kv_layer_bytes("sliding", "fp8") == 8 * (192 + 128)


def test_minimax_m3_sparse_layers() -> None:
    m = get_model("minimax-m3")
    assert m.layer_types[:4] == ("full", "full", "full", "sparse")
    assert m.index is not None and m.index.index_topk == 16 * 128
    # a sparse layer caches K, V and one FP8 index key (+ fp32 scale) per token
    assert m.kv_layer_bytes("sparse", "bf16") == 4 * 256 * 2 + 128 + 4
    assert not m.is_moe_layer(2) and m.is_moe_layer(3)


def test_qwen3_next_interval_and_gate() -> None:
    m = get_model("Qwen/Qwen3-Next-80B-A3B-Thinking")
    # every 4th layer full (gated) attention, the rest Gated DeltaNet; card: 80B total, A3B
    assert m.layer_types[:4] == ("linear", "linear", "linear", "full")
    assert m.attn_output_gate and m.count_layers("full") == 12
    assert m.total_params / 1e9 == pytest.approx(79.7, abs=0.2)
    assert m.kv_bytes_per_token("bf16") == 12 * 2 * 2 * 256 * 2


def test_glm_aliases_share_one_shape() -> None:
    assert get_model("zai-org/GLM-4.6").name == get_model("zai-org/GLM-4.7-FP8").name == "glm-4.7"
    assert get_model("glm-4.7").total_params / 1e9 == pytest.approx(352.8, abs=0.2)  # + MTP: 355B


@pytest.mark.parametrize(
    "model_type",
    [
        "nemotron_h",
        "llama4_text",
        "deepseek_v4",
        "gemma4_text",
        "mimo_v2_flash",
        "minimax_m3",
        "kimi_linear",
        "nemotron-nas",
        "qwen3_next",
    ],
)
def test_family_readers_name_what_is_missing(model_type: str) -> None:
    """A bare config of each family is a ConfigError naming the file and architecture, never a
    stray exception from arithmetic on absent fields."""
    for extra in ({}, {"num_hidden_layers": 4}, {"num_hidden_layers": 4, "hidden_size": 64}):
        cfg = {"model_type": model_type, "architectures": ["X"], **extra}
        with pytest.raises(ConfigError, match="cannot read architecture X"):
            model_from_hf_config(cfg)
