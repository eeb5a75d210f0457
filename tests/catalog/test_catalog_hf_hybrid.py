"""Nemotron-H and Llama 4 config readers: layer kinds, parameters against the model cards."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"

TINY_NEMOTRON = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "hidden_size": 64,
    "hybrid_override_pattern": "M-*E",
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 128,
    "mamba_num_heads": 8,
    "mamba_head_dim": 8,
    "ssm_state_size": 16,
    "n_groups": 2,
    "conv_kernel": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "n_shared_experts": 1,
    "moe_shared_expert_intermediate_size": 48,
    "mlp_hidden_act": "relu2",
    "mamba_ssm_cache_dtype": "float32",
    "vocab_size": 100,
    "torch_dtype": "bfloat16",
}


def test_nemotron_blocks_by_hand() -> None:
    m = model_from_hf_config(TINY_NEMOTRON)
    assert m.layer_types == ("linear", "none", "full", "none")
    assert m.ffn_types == ("none", "dense", "none", "moe")
    assert not m.ffn_gated and m.ffn_mats == 2
    h = 64
    mamba = h * (2 * 2 * 16 + 2 * 64 + 2 * 8) + 64 * h + 4 * (2 * 2 * 16 + 64)
    mlp = 2 * h * 128  # squared ReLU: up and down only
    attn = h * 4 * 16 + 2 * h * 2 * 16 + 4 * 16 * h
    moe_all = 4 * 2 * h * 32 + 2 * h * 48 + h * 4
    moe_act = 2 * 2 * h * 32 + 2 * h * 48 + h * 4
    emb = 2 * 100 * h
    assert m.total_params == mamba + mlp + attn + moe_all + emb
    assert m.active_params == mamba + mlp + attn + moe_act + emb
    # KV only on the attention block; the Mamba state is fixed: H x d_state x head_dim fp32
    assert m.kv_bytes_per_token("bf16") == 2 * 2 * 16 * 2
    assert m.linear_state_bytes() == 8 * 16 * 8 * 4 + 3 * (2 * 2 * 16 + 64) * 2


def test_nemotron_pattern_errors_named() -> None:
    bad = {**TINY_NEMOTRON, "hybrid_override_pattern": "M-X*"}
    with pytest.raises(ConfigError, match="unknown Nemotron-H blocks X"):
        model_from_hf_config(bad)
    short = {**TINY_NEMOTRON, "num_hidden_layers": 5}
    with pytest.raises(ConfigError, match="4 blocks in the pattern for num_hidden_layers=5"):
        model_from_hf_config(short)


@pytest.mark.parametrize(
    ("stem", "total_b", "active_b"),
    [
        # model cards: Nano 31.6B total (~3.2B active + embeddings), Super 120B-A12B,
        # Ultra 550B-A55B, Nemotron-H-56B; Llama 4 Scout 109B / 17B, Maverick 400B / 17B
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6, 3.6),
        ("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 120.7, 12.8),
        ("nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 549.4, 56.2),
        ("nvidia--Nemotron-H-56B-Base-8K", 56.4, 56.4),
        ("meta-llama--Llama-4-Scout-17B-16E-Instruct", 107.8, 17.2),
        ("meta-llama--Llama-4-Maverick-17B-128E-Instruct", 400.7, 17.2),
    ],
)
def test_real_hybrid_params(stem: str, total_b: float, active_b: float) -> None:
    p = CONFIGS / f"{stem}_config.json"
    if not p.is_file():
        pytest.skip("shared data not present")
    m = model_from_hf_config(p)
    assert m.total_params / 1e9 == pytest.approx(total_b, abs=0.15)
    assert m.active_params / 1e9 == pytest.approx(active_b, abs=0.15)


def test_latent_moe_narrows_experts_and_dispatch() -> None:
    m = get_model("nemotron-3-super-120b-a12b")
    assert m.moe is not None and m.moe.latent_size == 1024
    assert m.moe.expert_dim(m.hidden_size) == 1024 < m.hidden_size


def test_llama4_layers() -> None:
    scout, mav = get_model("llama-4-scout-17b-16e"), get_model("llama-4-maverick-17b-128e")
    # every fourth layer is global NoPE attention; the rest attend within 8192-token chunks
    assert scout.layer_types[:4] == ("sliding", "sliding", "sliding", "full")
    assert scout.sliding_window == 8192
    assert scout.num_moe_layers == 48 and mav.num_moe_layers == 24
    assert mav.is_moe_layer(1) and not mav.is_moe_layer(0)
    # the chunk caps KV: a 100k-token context holds 12 global layers' worth in full
    per_tok = scout.kv_layer_bytes("full")
    assert scout.kv_bytes(100_000) == pytest.approx(per_tok * (12 * 100_000 + 36 * 8192))


def test_hybrid_hf_ids_resolve() -> None:
    assert get_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").name == "nemotron-3-nano-30b-a3b"
    m = get_model("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4")
    assert (m.name, m.weight_dtype) == ("nemotron-3-super-120b-a12b", "fp4")
    m = get_model("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8")
    assert (m.name, m.weight_dtype) == ("llama-4-maverick-17b-128e", "fp8")


def test_deepseek_v4_params_and_compressed_kv() -> None:
    flash, pro = get_model("deepseek-v4-flash"), get_model("deepseek-v4-pro")
    # DeepSeek's release notes: V4-Flash 284B total / 13B active, V4-Pro 1.6T / 49B (our
    # active count includes the 1.06B embedding + LM head of Flash)
    assert flash.total_params / 1e9 == pytest.approx(284, abs=1)
    assert flash.active_params / 1e9 == pytest.approx(13.8, abs=0.2)
    assert pro.total_params / 1e12 == pytest.approx(1.6, abs=0.05)
    assert pro.active_params / 1e9 == pytest.approx(49.8, abs=0.5)
    assert flash.layer_types[:4] == ("sliding", "sliding", "csa", "hca")
    assert (flash.weight_dtype, flash.default_moe_dtype()) == ("fp8", "w4a8")  # MXFP4 x FP8
    c = flash.csa
    assert c is not None
    # per token: a 512-wide K=V entry per 4 tokens (+ FP8 index key per 4) or per 128 tokens
    per_tok = flash.kv_layer_bytes("csa", "fp8")
    assert per_tok == pytest.approx(512 / 4 + 128 * (1 + 4 / 128) / 4)
    assert flash.kv_layer_bytes("hca", "fp8") == 512 / 128
    n_c, n_h = flash.count_layers("csa"), flash.count_layers("hca")
    window = (n_c + n_h + flash.count_layers("sliding")) * 128 * 512
    expect = n_c * per_tok * 100_000 + n_h * 4 * 100_000 + window
    assert flash.kv_bytes(100_000, "fp8") == pytest.approx(expect)
