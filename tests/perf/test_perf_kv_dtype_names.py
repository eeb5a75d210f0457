"""KV-cache dtype names: catalog.kv_dtype_bytes refuses weight-only dtypes and unknown names
listing only KV dtypes; perf.check_kv_cache_dtype says 'an int8' (black-box round 13)."""

from __future__ import annotations

import pytest

from pdplan.catalog.model_parts import DTYPE_BYTES, KV_DTYPES, kv_dtype_bytes
from pdplan.errors import ConfigError
from pdplan.perf.efficiency import check_kv_cache_dtype


@pytest.mark.parametrize("name", ["int4", "int8_wo", "w4a8", "mxfp4", "fp8_e5m3"])
def test_a_weight_only_or_unknown_dtype_is_no_kv_dtype(name: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown KV cache dtype '{name}'") as exc:
        kv_dtype_bytes(name)
    assert str(exc.value).split("use one of ")[1].startswith(", ".join(KV_DTYPES))


def test_kv_dtypes_have_their_sizes() -> None:
    assert {d: kv_dtype_bytes(d) for d in KV_DTYPES} == {d: DTYPE_BYTES[d] for d in KV_DTYPES}
    assert kv_dtype_bytes("NVFP4") == DTYPE_BYTES["fp4"]
    # engines' spellings: vLLM / SGLang fp8_e4m3 / fp8_e5m2, torch bfloat16
    assert kv_dtype_bytes("fp8_e5m2") == kv_dtype_bytes("FP8_E4M3") == DTYPE_BYTES["fp8"]
    assert kv_dtype_bytes("bfloat16") == DTYPE_BYTES["bf16"]


@pytest.mark.parametrize(
    ("engine", "dtype", "said"),
    [("vllm", "int8", "an int8"), ("vllm", "fp4", "an fp4"), ("sglang", "int8", "an int8")],
)
def test_the_engine_refusal_takes_the_right_article(engine: str, dtype: str, said: str) -> None:
    with pytest.raises(ConfigError, match=f"{engine} cannot store {said} KV cache"):
        check_kv_cache_dtype(engine, dtype, gpu_has_fp4=True)
