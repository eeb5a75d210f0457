"""catalog.hf_quant.attention_unquantized: which quantized MoE releases keep attention in
their base dtype (and so their experts' dtype apart)."""

from __future__ import annotations

import pytest

from pdplan.catalog.hf_quant import attention_unquantized


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        # gpt-oss: one glob for every layer's attention module
        ({"modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}, True),
        # ModelOpt NVFP4: one glob per layer, all layers present
        ({"ignore": [f"model.layers.{i}.self_attn*" for i in range(4)]}, True),
        # ... one layer missing: that layer's attention is FP4
        ({"ignore": [f"model.layers.{i}.self_attn*" for i in range(3)]}, False),
        # compressed-tensors regex (Kimi-K2.5 INT4), under a multimodal wrapper's prefix
        ({"ignore": ["re:.*self_attn.*", "lm_head"]}, True),
        ({"ignore": [f"language_model.model.layers.{i}.self_attn*" for i in range(4)]}, True),
        # hf_quant_config exclude_modules; linear-attention layers by their own name
        (
            {
                "exclude_modules": [
                    *(f"model.language_model.layers.{i}.linear_attn*" for i in (0, 1, 2)),
                    "model.language_model.layers.3.self_attn*",
                ]
            },
            True,
        ),
        # DeepSeek-V3.1-NVFP4: q / kv projections left out, o_proj quantized
        ({"ignore": [f"model.layers.{i}.self_attn.q_a_proj" for i in range(4)]}, False),
        ({"ignore": ["lm_head", "model.layers.0.mlp.gate"]}, False),  # gates only
        ({}, False),
        (None, False),
    ],
)
def test_attention_unquantized(quant: dict | None, expected: bool) -> None:
    assert attention_unquantized(quant, 4) is expected


def _moe_config(quant: dict, experts: int = 8) -> dict:
    cfg = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 1024,
        "intermediate_size": 2048,
        "num_hidden_layers": 4,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 64,
        "vocab_size": 32000,
        "torch_dtype": "bfloat16",
        "quantization_config": quant,
    }
    if experts:
        cfg |= {"num_local_experts": experts, "num_experts_per_tok": 2}
    else:
        cfg["architectures"], cfg["model_type"] = ["LlamaForCausalLM"], "llama"
    return cfg


def test_an_experts_only_release_keeps_its_attention_in_the_base_dtype() -> None:
    from pdplan.catalog.hf_config import model_from_hf_config

    quant = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}
    m = model_from_hf_config(_moe_config(quant))
    assert (m.weight_dtype, m.moe_weight_dtype, m.default_moe_dtype()) == ("bf16", "mxfp4", "mxfp4")
    everything = model_from_hf_config(_moe_config({"quant_method": "mxfp4"}))
    assert (everything.weight_dtype, everything.moe_weight_dtype) == ("mxfp4", None)
    dense = model_from_hf_config(_moe_config(quant, experts=0))  # no experts to keep apart
    assert (dense.weight_dtype, dense.moe_weight_dtype) == ("mxfp4", None)
