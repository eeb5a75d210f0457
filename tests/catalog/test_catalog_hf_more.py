"""Kimi Linear (Kimi-K3) and DeciLM (Nemotron-NAS) config readers: layer kinds, parameters and
KV by hand, and the real configs against their model cards."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pdplan.catalog.hf_config import _Reader, load_config_dict
from pdplan.catalog.hf_load import text_config
from pdplan.catalog.hf_more import MORE_READERS, decilm_ffn_width
from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"


def _read(d: dict[str, Any]) -> ModelSpec:
    """What model_from_hf_config does once MORE_READERS is in its dispatch."""
    t = text_config(d)
    arch = str((d.get("architectures") or ["?"])[0])
    reader = MORE_READERS[str(t["model_type"])]
    return reader(_Reader(t, "config.json", arch), t.get("quantization_config"), "m", "", arch)


def _real(stem: str) -> ModelSpec:
    p = CONFIGS / f"{stem}_config.json"
    if not p.is_file():
        pytest.skip("shared data not present")
    return _read(load_config_dict(p))


def _mla_gate(m: ModelSpec) -> int:
    """Per-layer MLA output-gate params ModelSpec does NOT yet count (0 once it does)."""
    assert m.mla is not None and m.attn_output_gate
    counted = m.attn_params("full") - dataclasses.replace(m, attn_output_gate=False).attn_params()
    gate = m.hidden_size * m.num_heads * m.mla.v_head_dim  # g_proj h -> heads * v_head_dim
    assert counted in (0, gate)
    return gate - counted


TINY_KIMI: dict[str, Any] = {
    "architectures": ["KimiLinearForCausalLM"],
    "model_type": "kimi_linear",
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 2,
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
    "mla_use_output_gate": True,
    "linear_attn_config": {
        "kda_layers": [1, 2, 3],
        "full_attn_layers": [4],
        "num_heads": 2,
        "head_dim": 16,
        "short_conv_kernel_size": 4,
        "use_full_rank_gate": True,
    },
    "intermediate_size": 96,
    "first_k_dense_replace": 1,
    "moe_layer_freq": 1,
    "num_experts": 4,
    "num_experts_per_token": 2,
    "moe_intermediate_size": 16,
    "num_shared_experts": 1,
    "routed_expert_hidden_size": 32,
    "vocab_size": 100,
    "dtype": "bfloat16",
}


def test_kimi_linear_by_hand() -> None:
    m = _read(TINY_KIMI)
    # 1-based lists: layers 1-3 KDA, layer 4 (0-based 3) MLA; layer 0 dense, then MoE
    assert m.layer_types == ("linear", "linear", "linear", "full")
    assert m.ffn_types == ("dense", "moe", "moe", "moe")
    h = 64
    # KDA as LinearAttnSpec (2 heads x 16 -> k = v = 32): q, k, v, gate (32 each), beta +
    # alpha (2 x 2), o_proj 32 x h, conv 4 x (32 + 32 + 32)
    kda = h * (4 * 32 + 2 * 2) + 32 * h + 4 * 96
    # MLA: q_a h x 32, q_b 32 x 2 x 12; kv_a h x (16 + 4), kv_b 16 x 2 x (8 + 8); o 2 x 8 x h
    mla = h * 32 + 32 * 2 * 12 + h * 20 + 16 * 2 * 16 + 2 * 8 * h
    dense = 3 * h * 96
    # latent MoE: experts 3 x 32 x 16 each, shared 3 x h x 16, router h x 4, latent 2 x h x 32
    moe_all = 4 * 3 * 32 * 16 + 3 * h * 16 + h * 4 + 2 * h * 32
    moe_act = 2 * 3 * 32 * 16 + 3 * h * 16 + h * 4 + 2 * h * 32
    emb = 2 * 100 * h
    gate = _mla_gate(m)  # g_proj h x 2 x 8 = 1024 while ModelSpec's MLA path leaves it out
    assert m.total_params + gate == 3 * kda + mla + 2 * h * 8 + dense + 3 * moe_all + emb
    assert m.active_params + gate == 3 * kda + mla + 2 * h * 8 + dense + 3 * moe_act + emb
    assert m.moe is not None and m.moe.latent_size == 32
    # KV only on the MLA layer: (kv_lora 16 + rope 4) x 2 B; KDA state 2 x 16 x 16 fp32 plus
    # conv state 3 x 96 bf16 per KDA layer
    assert m.kv_bytes_per_token("bf16") == 20 * 2
    assert m.linear_state_bytes() == 3 * (2 * 16 * 16 * 4 + 3 * 96 * 2)


def test_kimi_layer_lists_are_one_based() -> None:
    cfg = TINY_KIMI["linear_attn_config"]
    only_full = {**TINY_KIMI, "linear_attn_config": {**cfg, "kda_layers": None}}
    assert _read(only_full).layer_types == ("linear", "linear", "linear", "full")
    zero_based = {**TINY_KIMI, "linear_attn_config": {**cfg, "kda_layers": [0, 1, 2]}}
    with pytest.raises(ConfigError, match=r"\[0\] outside 1\.\.4 \(they are 1-based\)"):
        _read(zero_based)
    clash = {**TINY_KIMI, "linear_attn_config": {**cfg, "full_attn_layers": [3, 4]}}
    with pytest.raises(ConfigError, match=r"must split layers 1\.\.4"):
        _read(clash)
    no_cfg = {k: v for k, v in TINY_KIMI.items() if k != "linear_attn_config"}
    with pytest.raises(ConfigError, match="missing linear_attn_config"):
        _read(no_cfg)


TINY_DECI: dict[str, Any] = {
    "architectures": ["DeciLMForCausalLM"],
    "model_type": "nemotron-nas",
    "hidden_size": 48,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": None,
    "intermediate_size": None,
    "vocab_size": 10,
    "torch_dtype": "bfloat16",
    "block_configs": [
        {"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": 1.0}},
        {"attention": {"no_op": True}, "ffn": {"ffn_mult": 24.0}},
        {"attention": {"replace_with_linear": True}, "ffn": {"no_op": True}},
        {"attention": {"n_heads_in_group": 2}, "ffn": {"replace_with_linear": True}},
    ],
}


def test_decilm_by_hand() -> None:
    m = _read(TINY_DECI)
    assert m.layer_types == ("full", "none", "none", "full")
    assert m.ffn_types == ("dense", "dense", "none", "dense")
    assert m.num_kv_heads == 2 and m.head_dim == 12  # 4 heads / 2 per group; 48 / 4
    h = 48
    # widths: int(2 * 1.0 * 48 / 3) = 32 -> 256; int(2 * 24 * 48 / 3) = 768 (a multiple)
    assert (decilm_ffn_width(1.0, h), decilm_ffn_width(24.0, h)) == (256, 768)
    gqa = h * 48 + 2 * h * 2 * 12 + 48 * h  # q, k + v (2 KV heads of 12), o
    linear = h * h  # each replace_with_linear block: one h x h matrix
    exact = 2 * gqa + linear + 3 * h * (256 + 768) + linear + 2 * 10 * h
    assert m.total_params == m.active_params == exact
    # the one FFN width: (256 + 768 + h/3 + h/3) / 3 FFN layers = 352, exact here
    assert m.intermediate_size == 352
    assert m.kv_bytes_per_token("bf16") == 2 * (2 * 2 * 12 * 2)


def test_decilm_errors_named() -> None:
    blocks = TINY_DECI["block_configs"]
    with pytest.raises(ConfigError, match="3 block_configs for num_hidden_layers=4"):
        _read({**TINY_DECI, "block_configs": blocks[:3]})
    bad = [{"attention": {"n_heads_in_group": 3}, "ffn": {"ffn_mult": 1.0}}, *blocks[1:]]
    with pytest.raises(ConfigError, match=r"block_configs\[0\].attention: n_heads_in_group 3"):
        _read({**TINY_DECI, "block_configs": bad})
    windows = [
        {"attention": {"n_heads_in_group": 2, "window_length": w}, "ffn": {"ffn_mult": 1.0}}
        for w in (64, 128, 64, 64)
    ]
    with pytest.raises(ConfigError, match=r"window_length: \[64, 128\]"):
        _read({**TINY_DECI, "block_configs": windows})


def test_kimi_k3_against_card() -> None:
    m = _real("moonshotai--Kimi-K3")
    # MLA on 1-based layers 4, 8, ..., 92 and 93; KDA elsewhere; layer 0 dense, 92 MoE layers
    full = [i for i, k in enumerate(m.layer_types) if k == "full"]
    assert full == [*range(3, 92, 4), 92] and m.count_layers("linear") == 69
    assert m.ffn_types[0] == "dense" and m.num_moe_layers == 92
    assert m.moe is not None and (m.moe.latent_size, m.moe.num_experts) == (3584, 896)
    # MXFP4 routed experts; attention, shared experts, dense MLP and lm_head left BF16
    assert (m.weight_dtype, m.moe_weight_dtype) == ("bf16", "fp4")
    # card (Kimi K3 report, as quoted by third-party model pages): 2.78T total, ~104B active;
    # HF lists 2.8T with the vision tower. Ours: 2779.35B / 105.23B with the MLA gate, both
    # embedding and LM head counted (active less the 1.17B input embedding: 104.06B)
    gate = 24 * _mla_gate(m)
    assert (m.total_params + gate) / 1e9 == pytest.approx(2779.35, abs=0.01)
    assert (m.total_params + gate) / 1e9 == pytest.approx(2780, abs=5)
    assert (m.active_params + gate) / 1e9 == pytest.approx(104, abs=1.5)
    # KV: 24 MLA layers x (512 + 64) x 2 B; KDA state 69 x (96 x 128 x 128 x 4 B + conv)
    assert m.kv_bytes_per_token("bf16") == 24 * 576 * 2 == 27_648
    assert m.linear_state_bytes() == 69 * (96 * 128 * 128 * 4 + 3 * 3 * 96 * 128 * 2)


def test_nemotron_super_49b_against_card() -> None:
    m = _real("nvidia--Llama-3_3-Nemotron-Super-49B-v1")
    assert m.count_layers("full") == 49 and m.count_layers("none") == 31
    assert m.layer_types[:8] == ("full",) * 6 + ("none",) * 2
    assert m.num_kv_heads == 8 and m.ffn_types == ("dense",) * 80
    # exact per-layer count: 49 x (2 h^2 + 2 h x 8 x 128) + 3 h x sum(widths) + 2 V h
    h, widths = 8192, 1_642_496
    exact = 49 * (2 * h * h + 2 * h * 1024) + 3 * h * widths + 2 * 128256 * h
    assert exact == 49_866_080_256
    assert m.intermediate_size == 20531  # 1,642,496 / 80 = 20531.2
    assert exact - m.total_params == 3 * h * 16  # the 0.2 x 80 lost to rounding
    assert m.total_params / 1e9 == pytest.approx(49.9, abs=0.05)  # model card: 49.9B
    assert m.active_params == m.total_params
    # KV: 49 attention layers x 2 (K, V) x 8 heads x 128 x 2 B
    assert m.kv_bytes_per_token("bf16") == 49 * 2 * 8 * 128 * 2 == 200_704


def test_more_readers_keys() -> None:
    assert set(MORE_READERS) == {"kimi_linear", "nemotron-nas"}


@pytest.mark.parametrize("window", ["abc", 1.5, -64, True])
def test_decilm_window_that_is_no_whole_number_is_named(window: object) -> None:
    # 'abc' raised a bare ValueError from int(); 1.5 was cut to a 1-token window
    blocks = [
        {"attention": {"n_heads_in_group": 2, "window_length": window}, "ffn": {"ffn_mult": 1.0}},
        *TINY_DECI["block_configs"][1:],
    ]
    with pytest.raises(InputError, match=r"block_configs\[0\].attention.window_length must be"):
        _read({**TINY_DECI, "block_configs": blocks})
