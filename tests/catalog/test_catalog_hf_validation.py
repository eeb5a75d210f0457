"""Impossible config.json numbers are one InputError naming the file and the key; an absent
num_key_value_heads means multi-head attention (transformers LlamaConfig)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.hf_validate import check_config_numbers
from pdplan.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"

# Llama-2-7B shape: 32 layers, 32 heads of 128, MHA
LLAMA_7B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "intermediate_size": 11008,
    "vocab_size": 32000,
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hidden_size": -4096}, "hidden_size must be a whole number > 0, got -4096"),
        ({"head_dim": 0}, "head_dim must be a whole number > 0, got 0"),
        ({"num_attention_heads": 0}, "num_attention_heads must be a whole number > 0, got 0"),
        ({"num_hidden_layers": 32.5}, "num_hidden_layers must be a whole number > 0, got 32.5"),
        ({"num_hidden_layers": "32"}, "num_hidden_layers must be a whole number > 0, got '32'"),
        ({"vocab_size": 0}, "vocab_size must be a whole number > 0, got 0"),
        ({"intermediate_size": -1}, "intermediate_size must be a whole number >= 0, got -1"),
        (
            {"num_key_value_heads": 5},
            "num_key_value_heads 5 does not divide num_attention_heads 32",
        ),
        (
            {"num_key_value_heads": 64},
            "num_key_value_heads 64 cannot exceed num_attention_heads 32",
        ),
        (
            {"num_local_experts": 8, "num_experts_per_tok": 9},
            "num_experts_per_tok 9 cannot exceed num_local_experts 8",
        ),
        (
            {"num_local_experts": 8, "num_experts_per_tok": 0},
            "num_experts_per_tok must be >= 1 with num_local_experts 8, got 0",
        ),
        ({"num_experts": -8}, "num_experts must be a whole number >= 0, got -8"),
        (
            {"hidden_size": 16, "num_key_value_heads": None},
            "hidden_size 16 < num_attention_heads 32 gives head_dim 0 (no head_dim given)",
        ),
    ],
)
def test_impossible_numbers_name_file_and_key(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = tmp_path / "z_config.json"
    path.write_text(json.dumps({**LLAMA_7B, **change}))
    with pytest.raises(InputError) as e:
        model_from_hf_config(path)
    assert str(e.value) == f"{path}: {message}"


def test_every_problem_in_one_error() -> None:
    with pytest.raises(InputError) as e:
        model_from_hf_config({**LLAMA_7B, "hidden_size": -1, "vocab_size": 2.5})
    assert str(e.value) == (
        "config.json: hidden_size must be a whole number > 0, got -1; "
        "vocab_size must be a whole number > 0, got 2.5"
    )


def test_family_keys_and_nested_keys_are_checked() -> None:
    with pytest.raises(InputError, match="n_groups 4 does not divide mamba_num_heads 6"):
        check_config_numbers({"mamba_num_heads": 6, "n_groups": 4}, "x.json")
    with pytest.raises(InputError, match=r"linear_attn_config\.head_dim must be .* got -128"):
        check_config_numbers({"linear_attn_config": {"num_heads": 8, "head_dim": -128}}, "x.json")
    with pytest.raises(InputError, match="swa_num_key_value_heads 3 does not divide"):
        check_config_numbers({"swa_num_attention_heads": 64, "swa_num_key_value_heads": 3}, "x")
    # 0 where the readers read it as "none" is allowed
    check_config_numbers({"q_lora_rank": 0, "num_experts": 0, "n_shared_experts": 0}, "x.json")


def test_family_reader_lists_are_checked() -> None:
    deci = {
        "architectures": ["DeciLMForCausalLM"],
        "model_type": "nemotron-nas",
        "hidden_size": 48,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "vocab_size": 10,
        "block_configs": [{"attention": {"n_heads_in_group": -2}, "ffn": {"ffn_mult": 1.0}}],
    }
    with pytest.raises(
        InputError,
        match=r"block_configs\[0\]\.attention\.n_heads_in_group must be a whole number > 0, got -2",
    ):
        model_from_hf_config(deci)
    deci["block_configs"] = [{"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": -1.0}}]
    with pytest.raises(InputError, match=r"block_configs\[0\]\.ffn\.ffn_mult must be > 0"):
        model_from_hf_config(deci)


def test_missing_kv_heads_is_multi_head_attention() -> None:
    d = {k: v for k, v in LLAMA_7B.items() if k != "num_key_value_heads"}
    m = model_from_hf_config(d)
    assert m.num_kv_heads == 32
    # 2 (K, V) * 32 layers * 32 heads * 128 dims * 2 B (bf16) = 524,288 B per token
    assert m.kv_bytes_per_token("bf16") == 524_288
    assert model_from_hf_config({**d, "num_key_value_heads": None}).num_kv_heads == 32
    # GPT-2 spellings: n_embd / n_layer / n_head, no KV head count at all
    gpt = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12}
    m = model_from_hf_config({**gpt, "intermediate_size": 3072, "vocab_size": 50257})
    assert (m.num_heads, m.num_kv_heads, m.head_dim) == (12, 12, 64)


def test_a_whole_float_is_a_whole_number() -> None:
    assert model_from_hf_config({**LLAMA_7B, "num_hidden_layers": 32.0}).num_layers == 32


def test_missing_fields_still_a_config_error() -> None:
    d = {k: v for k, v in LLAMA_7B.items() if k != "vocab_size"}
    with pytest.raises(ConfigError, match="missing vocab_size"):
        model_from_hf_config(d)


@pytest.mark.skipif(not CONFIGS.is_dir(), reason="reference configs not present")
def test_no_reference_config_is_refused() -> None:
    files = [p for p in sorted(CONFIGS.glob("*.json")) if "hf_quant_config" not in p.name]
    assert len(files) >= 80
    for p in files:
        d = json.loads(p.read_text())
        check_config_numbers(d.get("text_config") or d, str(p))
        assert model_from_hf_config(p).total_params > 0, p.name


def test_more_dense_layers_than_layers_is_refused() -> None:
    """DeepSeek's first_k_dense_replace past the layer count made the model all dense (a
    37B DeepSeek-V3) without a word."""
    cfg = {**LLAMA_7B, "n_routed_experts": 8, "num_experts_per_tok": 2}
    cfg |= {"moe_intermediate_size": 1024, "first_k_dense_replace": 99}
    with pytest.raises(InputError, match="first_k_dense_replace 99 cannot exceed"):
        check_config_numbers(cfg, "config.json")


def test_a_config_json_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    from pdplan.catalog.hf_config import load_config_dict

    p = tmp_path / "config.json"
    p.write_text(json.dumps(LLAMA_7B), encoding="utf-8-sig")
    assert load_config_dict(p)["hidden_size"] == LLAMA_7B["hidden_size"]


def test_quant_only_file_names_the_config_to_pass(tmp_path: Path) -> None:
    """A ModelOpt hf_quant_config.json given as the model: the error names its config.json."""
    q = tmp_path / "org--M-NVFP4_hf_quant_config.json"
    q.write_text(
        json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}})
    )
    with pytest.raises(ConfigError) as e:
        model_from_hf_config(q)
    assert "ModelOpt hf_quant_config.json" in str(e.value)
    assert str(tmp_path / "org--M-NVFP4_config.json") in str(e.value)
    # the config beside it is read with the quant file: NVFP4 weights
    (tmp_path / "org--M-NVFP4_config.json").write_text(json.dumps(LLAMA_7B))
    assert model_from_hf_config(tmp_path / "org--M-NVFP4_config.json").weight_dtype == "fp4"
