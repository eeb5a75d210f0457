"""HF ids of architecture-identical releases resolve to the preset with that shape."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_model


@pytest.mark.parametrize(
    ("hf_id", "key", "dtype"),
    [
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-70b", "bf16"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1", "fp8"),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3.1", "fp8"),
        ("nvidia/GLM-5.3-NVFP4", "glm-5.3", "fp4"),
        ("zai-org/GLM-5.1-FP8", "glm-5.1", "fp8"),
        ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl-8b", "bf16"),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b", "bf16"),
        ("MiniMaxAI/MiniMax-M2", "minimax-m2.5", "fp8"),
        ("MiniMaxAI/MiniMax-M2.1", "minimax-m2.5", "fp8"),
        ("mistralai/Mistral-Large-Instruct-2411", "mistral-large-2407", "bf16"),
        ("Qwen/Qwen3-14B-FP8", "qwen3-14b", "fp8"),
        # underscores / spaces for hyphens, and InferenceMAX's short names
        ("deepseek_r1", "deepseek-r1", "fp8"),
        ("gpt_oss_120b", "gpt-oss-120b", "mxfp4"),
        ("dsr1", "deepseek-r1", "fp8"),
        ("Qwen3.5-397B", "qwen3.5-397b-a17b", "bf16"),
        # AMD Quark checkpoints (InferenceMAX MI355X recipes)
        ("amd/DeepSeek-R1-0528-MXFP4-Preview", "deepseek-r1", "mxfp4"),  # E8M0 scale per 32
        ("amd/Llama-3.3-70B-Instruct-FP8-KV", "llama-3.1-70b", "fp8"),
        ("amd/gpt-oss-120b-w-mxfp4-a-fp8", "gpt-oss-120b", "w4a8"),
    ],
)
def test_equivalent_ids(hf_id: str, key: str, dtype: str) -> None:
    m = get_model(hf_id)  # dtype: the experts' where a release keeps them apart (gpt-oss)
    assert (m.name, m.moe_weight_dtype or m.weight_dtype) == (key, dtype)
    if key == "gpt-oss-120b":
        assert m.weight_dtype == "bf16"  # attention, router, embeddings: not quantized


def test_llama_33_has_the_31_shape() -> None:
    a, b = get_model("meta-llama/Llama-3.3-70B-Instruct"), get_model("llama-3.1-70b")
    assert a.total_params == b.total_params and a.kv_bytes_per_token() == b.kv_bytes_per_token()


def test_every_presets_own_hf_id_resolves_to_it() -> None:
    # "nvidia/Llama-3_3-Nemotron-Super-49B-v1" (underscores for dots) named no preset
    from pdplan.catalog.models import list_models

    for key in list_models():
        hf_id = get_model(key).hf_id
        if hf_id:
            assert get_model(hf_id).name == key, (key, hf_id)
