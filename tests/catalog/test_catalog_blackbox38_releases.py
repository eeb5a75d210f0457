"""Black-box audit 38: a quantised release named by its id gives the dtypes its own config.json
gives (NVIDIA ModelOpt NVFP4 MoE exports: BF16 attention, FP4 experts, FP8 KV cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.model_releases import RELEASES, release_dtypes
from pdplan.catalog.model_spec import ModelSpec
from pdplan.catalog.models import get_model

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"


def _dtypes(m: ModelSpec) -> tuple[str, str | None, str | None]:
    return m.weight_dtype, m.moe_weight_dtype, m.kv_cache_dtype


@pytest.mark.parametrize(
    "name",
    [
        "nvidia/GLM-5-NVFP4",
        "nvidia/GLM-5.1-NVFP4",
        "nvidia/MiniMax-M2.5-NVFP4",
        "nvidia/MiniMax-M2.7-NVFP4",
        "nvidia/Qwen3.5-397B-A17B-NVFP4",
        "nvidia/Qwen3.5-122B-A10B-NVFP4",
    ],
)
def test_nvfp4_moe_releases_by_name_keep_attention_bf16_and_kv_fp8(name: str) -> None:
    # was ('fp4', None, None): every weight FP4 and a BF16 KV cache
    m = get_model(name)
    assert _dtypes(m) == ("bf16", "fp4", "fp8")
    assert m.default_moe_dtype() == "fp4" and m.serving_kv_dtype == "fp8"
    assert m.hf_id == name


def test_the_name_is_matched_in_any_letter_case() -> None:
    assert _dtypes(get_model("NVIDIA/glm-5-nvfp4")) == ("bf16", "fp4", "fp8")


def test_another_orgs_nvfp4_build_keeps_the_suffix_rule() -> None:
    # only NVIDIA's exports are listed; a RedHatAI-style build may quantize other parts
    assert _dtypes(get_model("someone/GLM-5-NVFP4")) == ("fp4", None, None)


def test_a_dense_model_takes_the_experts_dtype_for_all_weights() -> None:
    assert release_dtypes("nvidia/GLM-5-NVFP4", has_moe=False) == {
        "weight_dtype": "fp4",
        "moe_weight_dtype": None,
        "kv_cache_dtype": "fp8",
    }
    assert release_dtypes("zai-org/GLM-5", has_moe=True) is None


@pytest.mark.parametrize("hf_id", sorted(RELEASES))
def test_every_listed_release_agrees_with_its_config(hf_id: str) -> None:
    org, name = hf_id.split("/")
    found = [
        p for p in CONFIGS.glob("*_config.json") if p.name.lower() == f"{org}--{name}_config.json"
    ]
    if not found:
        pytest.skip("shared data not present")
    by_config = model_from_hf_config(found[0])
    assert _dtypes(get_model(hf_id)) == _dtypes(by_config)
