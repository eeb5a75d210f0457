"""Black-box audit 37: weight dtypes of ModelOpt MIXED_PRECISION (experts-only NVFP4) configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.models import get_model

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"


V4_NVFP4 = ["nvidia--DeepSeek-V4-Flash-NVFP4", "nvidia--DeepSeek-V4-Pro-NVFP4"]


@pytest.mark.parametrize("stem", V4_NVFP4)
def test_v4_nvfp4_config_keeps_fp8_rest_and_fp4_experts(stem: str) -> None:
    # quantization_config: quant_method fp8 (the base's FP8 blocks) for attention and shared
    # experts, moe_quant_algo NVFP4 for the routed experts; the config's leftover
    # expert_dtype "fp4" (the base's MXFP4 x FP8 = w4a8) no longer describes them
    p = CONFIGS / f"{stem}_config.json"
    if not p.is_file():
        pytest.skip("shared data not present")
    m = model_from_hf_config(p)
    assert (m.weight_dtype, m.default_moe_dtype()) == ("fp8", "fp4")
    by_name = get_model(stem.replace("--", "/", 1))  # the same checkpoint named, as the catalog
    assert (by_name.weight_dtype, by_name.default_moe_dtype()) == ("fp8", "fp4")


def test_v4_base_release_experts_stay_w4a8() -> None:
    p = CONFIGS / "deepseek-ai--DeepSeek-V4-Flash_config.json"
    if not p.is_file():
        pytest.skip("shared data not present")
    m = model_from_hf_config(p)
    assert (m.weight_dtype, m.default_moe_dtype()) == ("fp8", "w4a8")
