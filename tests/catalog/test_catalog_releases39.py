"""A bare "-NVFP4" release name (no org) reads as NVIDIA's ModelOpt release of that name."""

from __future__ import annotations

import pytest

from pdplan.catalog.models import get_model


@pytest.mark.parametrize("name", ["GLM-5-NVFP4", "glm-5-nvfp4", "Kimi-K2.5-NVFP4"])
def test_bare_nvfp4_name_is_nvidias_release(name: str) -> None:
    bare, full = get_model(name), get_model("nvidia/" + name)
    assert (bare.weight_dtype, bare.moe_weight_dtype, bare.kv_cache_dtype) == (
        full.weight_dtype,
        full.moe_weight_dtype,
        full.kv_cache_dtype,
    )
    assert bare.weight_dtype == "bf16" and bare.moe_weight_dtype == "fp4"  # attention kept


def test_other_orgs_nvfp4_build_keeps_the_suffix_rule() -> None:
    m = get_model("RedHatAI/GLM-5-NVFP4")
    assert m.weight_dtype == "fp4" and m.kv_cache_dtype is None


def test_bare_fp8_name_is_not_guessed_to_be_nvidias() -> None:
    # -FP8 builds come from many orgs with different KV choices; only the full id says which
    assert get_model("Llama-3.1-70B-Instruct-FP8").kv_cache_dtype is None
