"""Tests of the HF config.json reader: hand-computed shapes, field spellings, errors, real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"

LLAMA_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def _tiny_moe(**extra: Any) -> dict[str, Any]:
    """h=8, 2 layers, 2 heads of 4, 1 KV head, 4 experts of width 16, top-2, vocab 10."""
    d: dict[str, Any] = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 8,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 4,
        "intermediate_size": 16,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "vocab_size": 10,
        "sliding_window": None,
    }
    d.update(extra)
    return d


def test_llama_8b_params_and_kv_by_hand() -> None:
    m = model_from_hf_config(LLAMA_8B, name="l8")
    # head_dim missing -> hidden / heads = 4096 / 32 = 128
    assert m.head_dim == 128
    # per layer: q 4096*4096 + kv 2*4096*8*128 + o 4096*4096 = 41,943,040
    #            ffn 3*4096*14336 = 176,160,768; x32 layers; + embed & head 2*128256*4096
    assert m.total_params == 32 * (41_943_040 + 176_160_768) + 2 * 128256 * 4096
    assert m.total_params == 8_029_995_008
    assert m.active_params == m.total_params
    # 2 (K,V) * 32 layers * 8 heads * 128 dims * 2 B
    assert m.kv_bytes_per_token("bf16") == 131_072
    assert m.weight_dtype == "bf16" and m.attention_kind == "gqa" and not m.is_moe


def test_tiny_moe_params_by_hand() -> None:
    m = model_from_hf_config(_tiny_moe())
    # attn: q 8*8 + kv 2*8*4 + o 8*8 = 192; experts 4*3*8*16 = 1536, router 8*4 = 32
    # embeddings 2*10*8 = 160; active uses 2 experts: 2*3*8*16 = 768
    assert m.total_params == 2 * (192 + 1536 + 32) + 160 == 3680
    assert m.active_params == 2 * (192 + 768 + 32) + 160 == 2144
    assert m.moe is not None and m.moe.expert_intermediate_size == 16  # Mixtral: no moe_ width
    assert m.sliding_window is None and set(m.layer_types) == {"full"}  # null window ignored


def test_expert_field_spellings() -> None:
    for key in ("num_experts", "num_local_experts", "n_routed_experts"):
        d = _tiny_moe()
        d.pop("num_local_experts")
        d[key] = 4
        assert model_from_hf_config(d).moe.num_experts == 4  # type: ignore[union-attr]
    d = _tiny_moe(experts_per_token=3)
    d.pop("num_experts_per_tok")
    assert model_from_hf_config(d).moe.experts_per_token == 3  # type: ignore[union-attr]


def test_qwen_sparse_step_and_mlp_only_layers() -> None:
    d = _tiny_moe(num_hidden_layers=6, decoder_sparse_step=2, mlp_only_layers=[3])
    d["moe_intermediate_size"] = 4
    m = model_from_hf_config(d)
    # Qwen2/3-MoE: MoE iff (i+1) % 2 == 0 and i not in mlp_only_layers -> layers 1 and 5
    assert [m.is_moe_layer(i) for i in range(6)] == [False, True, False, False, False, True]
    assert m.num_moe_layers == 2


def test_moe_layer_freq_list_and_first_dense() -> None:
    m = model_from_hf_config(_tiny_moe(num_hidden_layers=4, moe_layer_freq=[0, 0, 1, 1]))
    assert [m.is_moe_layer(i) for i in range(4)] == [False, False, True, True]
    m = model_from_hf_config(_tiny_moe(num_hidden_layers=4, first_k_dense_replace=1))
    assert [m.is_moe_layer(i) for i in range(4)] == [False, True, True, True]


def test_shared_experts_qwen_and_deepseek_styles() -> None:
    qwen = model_from_hf_config(_tiny_moe(shared_expert_intermediate_size=6))
    assert (qwen.moe.num_shared_experts, qwen.moe.shared_intermediate_size) == (1, 6)  # type: ignore[union-attr]
    ds = model_from_hf_config(_tiny_moe(n_shared_experts=2, moe_intermediate_size=5))
    assert (ds.moe.num_shared_experts, ds.moe.shared_intermediate_size) == (2, 5)  # type: ignore[union-attr]
    mm = model_from_hf_config(_tiny_moe(shared_intermediate_size=0))  # MiniMax: none
    assert mm.moe.num_shared_experts == 0  # type: ignore[union-attr]


def test_sliding_rules() -> None:
    lt = ["sliding_attention", "full_attention"]
    m = model_from_hf_config(_tiny_moe(layer_types=lt, sliding_window=128))
    assert m.layer_types == ("sliding", "full") and m.sliding_window == 128
    mistral = dict(LLAMA_8B, model_type="mistral", sliding_window=4096, num_hidden_layers=2)
    assert model_from_hf_config(mistral).layer_types == ("sliding", "sliding")
    qwen = dict(LLAMA_8B, sliding_window=4096, use_sliding_window=False)
    assert model_from_hf_config(qwen).sliding_window is None
    with pytest.raises(ConfigError, match="missing sliding_window"):
        model_from_hf_config(_tiny_moe(layer_types=lt))


def test_text_config_nesting_and_top_level_quant() -> None:
    outer = {
        "architectures": ["FooForConditionalGeneration"],
        "text_config": dict(LLAMA_8B),
        "quantization_config": {"quant_method": "fp8"},
    }
    m = model_from_hf_config(outer)
    assert m.architecture == "FooForConditionalGeneration" and m.total_params == 8_029_995_008
    assert m.weight_dtype == "fp8"


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        ({"quant_method": "fp8"}, "fp8"),
        ({"quant_method": "mxfp4"}, "mxfp4"),  # E8M0 scale per 32 values
        ({"quant_algo": "NVFP4", "producer": {"name": "modelopt"}}, "fp4"),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}},
            },
            "int4",
        ),
        (
            {"quant_method": "fp8", "quant_algo": "MIXED_PRECISION", "moe_quant_algo": "NVFP4"},
            "fp4",
        ),
    ],
)
def test_quantization_to_weight_dtype(quant: dict[str, Any], expected: str) -> None:
    assert model_from_hf_config(dict(LLAMA_8B, quantization_config=quant)).weight_dtype == expected


def test_unknown_quantization_is_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown quantization"):
        model_from_hf_config(dict(LLAMA_8B, quantization_config={"quant_method": "zzz"}))


@pytest.mark.parametrize(("dtype", "expected"), [("float16", "fp16"), ("float32", "bf16")])
def test_torch_dtype_read(dtype: str, expected: str) -> None:
    assert model_from_hf_config({**LLAMA_8B, "torch_dtype": dtype}).weight_dtype == expected


def test_unknown_torch_dtype_is_named() -> None:
    with pytest.raises(ConfigError, match="unknown torch_dtype 'float8_e5m2'"):
        model_from_hf_config({**LLAMA_8B, "torch_dtype": "float8_e5m2"})


def test_missing_fields_named_in_one_error() -> None:
    d = {k: v for k, v in LLAMA_8B.items() if k not in ("vocab_size", "intermediate_size")}
    d["architectures"] = ["FooForCausalLM"]
    with pytest.raises(ConfigError) as e:
        model_from_hf_config(d)
    assert str(e.value) == (
        "config.json: cannot read architecture FooForCausalLM: "
        "missing intermediate_size, vocab_size"
    )


def test_unsupported_layout_is_config_error() -> None:
    with pytest.raises(ConfigError, match="Mamba"):
        model_from_hf_config(dict(LLAMA_8B, hybrid_override_pattern="M-M*"))


def test_bad_files_are_input_errors(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 1,\n oops}')
    with pytest.raises(InputError) as e:
        model_from_hf_config(bad)
    assert str(e.value).startswith(f"{bad}:2: not valid JSON")
    with pytest.raises(InputError, match="cannot read config"):
        model_from_hf_config(tmp_path / "nope.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        model_from_hf_config(tmp_path / "list.json")


def test_directory_and_side_quant_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_8B))
    (tmp_path / "hf_quant_config.json").write_text(
        json.dumps({"quantization": {"quant_algo": "NVFP4"}})
    )
    m = model_from_hf_config(tmp_path)
    assert m.weight_dtype == "fp4" and m.hf_id == tmp_path.name


# ---- the real configs ------------------------------------------------------------------------
MUST_READ = [
    "meta-llama--Meta-Llama-3.1-8B",
    "meta-llama--Meta-Llama-3.1-70B",
    "meta-llama--Meta-Llama-3.1-405B",
    "Qwen--Qwen3-32B",
    "Qwen--Qwen3-235B-A22B",
    "Qwen--Qwen3-30B-A3B",
    "mistralai--Mixtral-8x7B-v0.1",
    "deepseek-ai--DeepSeek-V3",
    "deepseek-ai--DeepSeek-R1",
    "moonshotai--Kimi-K2-Instruct",
    "moonshotai--Kimi-K2.5",
    "openai--gpt-oss-120b",
    "openai--gpt-oss-20b",
    "MiniMaxAI--MiniMax-M2.5",
    "Qwen--Qwen3.5-397B-A17B",
    "zai-org--GLM-5",
    "nvidia--GLM-5-NVFP4",
]


def _real_configs() -> list[Path]:
    if not CONFIGS.is_dir():
        pytest.skip(f"shared data not present at {CONFIGS}")
    files = sorted(CONFIGS.glob("*_config.json"))
    return [f for f in files if not f.name.endswith("_hf_quant_config.json")]


def test_every_real_config_reads_or_names_why() -> None:
    ok, failed = [], []
    for f in _real_configs():
        try:
            model_from_hf_config(f)
            ok.append(f.name)
        except ConfigError as e:
            assert str(e).startswith(f"{f}: cannot read architecture "), str(e)
            failed.append(f.name)
    print(f"hf configs: {len(ok)} read, {len(failed)} refused with ConfigError")
    assert (len(ok), len(failed)) == (88, 0)
    for stem in MUST_READ:
        assert f"{stem}_config.json" in ok, stem


def test_real_special_cases() -> None:
    _real_configs()
    oss = model_from_hf_config(CONFIGS / "openai--gpt-oss-120b_config.json")
    assert oss.layer_types[:2] == ("sliding", "full") and oss.sliding_window == 128
    assert oss.moe.experts_per_token == 4  # type: ignore[union-attr]
    # MXFP4 experts; attention, router and embeddings stay BF16 (modules_to_not_convert)
    assert (oss.weight_dtype, oss.moe_weight_dtype) == ("bf16", "mxfp4")
    q35 = model_from_hf_config(CONFIGS / "Qwen--Qwen3.5-397B-A17B_config.json")
    assert q35.layer_types[:4] == ("linear", "linear", "linear", "full")
    assert q35.count_layers("linear") == 45 and q35.attn_output_gate
    assert q35.linear_attn is not None and q35.linear_attn.num_value_heads == 64
    glm = model_from_hf_config(CONFIGS / "zai-org--GLM-5_config.json")
    assert glm.attention_kind == "mla" and glm.mla.v_head_dim == 256  # type: ignore[union-attr]
    assert glm.num_mtp_layers == 1 and glm.moe.first_dense_layers == 3  # type: ignore[union-attr]
    nv = model_from_hf_config(CONFIGS / "nvidia--DeepSeek-V3.1-NVFP4_config.json")
    assert nv.weight_dtype == "fp4"  # from the hf_quant_config.json side file
    k25 = model_from_hf_config(CONFIGS / "moonshotai--Kimi-K2.5_config.json")
    assert k25.moe.num_experts == 384  # type: ignore[union-attr]
    # INT4 experts (compressed-tensors); its ignore list keeps every layer's self_attn BF16
    assert (k25.weight_dtype, k25.moe_weight_dtype) == ("bf16", "int4")
    nvk = model_from_hf_config(CONFIGS / "nvidia--Kimi-K2.5-NVFP4_config.json")
    assert (nvk.weight_dtype, nvk.moe_weight_dtype) == ("bf16", "fp4")  # ModelOpt ignore globs
    # the NVFP4 DeepSeek-V3.1 quantizes o_proj (only q / kv projections left out): one dtype
    assert (nv.weight_dtype, nv.moe_weight_dtype) == ("fp4", None)
