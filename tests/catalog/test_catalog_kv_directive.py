"""A checkpoint's KV-cache directive (ModelOpt / compressed-tensors) read into ModelSpec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.catalog.hf_quant import kv_dtype_from_config
from pdplan.catalog.models import get_model, model_from_hf_config


@pytest.mark.parametrize(
    ("quant", "expected"),
    [
        ({"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}, "fp8"),  # hf_quant_config.json
        ({"quant_method": "modelopt", "kv_cache_scheme": {"num_bits": 8, "type": "float"}}, "fp8"),
        ({"quant_algo": "FP8", "kv_cache_scheme": "FP8"}, "fp8"),
        ({"quant_method": "compressed-tensors", "kv_cache_scheme": None}, None),  # Kimi-K2.5
        ({"quant_method": "fp8", "fmt": "e4m3"}, None),  # weights only (DeepSeek, MiniMax)
        ({"kv_cache_quant_algo": None}, None),
        ({"kv_cache_scheme": {"num_bits": 8, "type": "int"}}, None),  # int8 KV: not modelled
        (None, None),
    ],
)
def test_kv_directive_of_a_quantization_config(quant: dict | None, expected: str | None) -> None:
    assert kv_dtype_from_config(quant) == expected


def test_nvfp4_exports_ask_for_fp8_kv_and_the_vendor_release_does_not(tmp_path: Path) -> None:
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 128, "intermediate_size": 4096, "vocab_size": 32000,
        "torch_dtype": "bfloat16",
    }  # fmt: skip
    plain = model_from_hf_config(cfg)
    assert plain.kv_cache_dtype is None and plain.serving_kv_dtype == "bf16"
    # ModelOpt keeps the quantization apart, in hf_quant_config.json beside config.json
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    side = {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}}
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(side))
    nv = model_from_hf_config(tmp_path)
    assert nv.weight_dtype == "fp4" and nv.serving_kv_dtype == "fp8"
    # presets read from NVIDIA's copies keep it; the vendor's own FP8 release has none
    assert get_model("nemotron-3-super-120b-a12b").serving_kv_dtype == "fp8"
    assert get_model("minimax-m2.5").serving_kv_dtype == "bf16"
    assert get_model("deepseek-v3.1").serving_kv_dtype == "bf16"  # fp8 release, not the copy
