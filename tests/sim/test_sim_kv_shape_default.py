"""SimConfig takes the KV size per token from the instances' cost model unless given."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.sim import InstanceSpec, SimConfig


def _inst(kv_dtype: str) -> InstanceSpec:
    cm = CostModel(
        get_model("llama-3.1-8b"), get_gpu("h100-sxm"), Layout(tp=1), "vllm", None, kv_dtype
    )
    return InstanceSpec("agg", cm)


def test_kv_bytes_come_from_the_model_at_its_kv_dtype() -> None:
    """Llama-3.1-8B: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 B = 131,072 B per token;
    it used to default to Llama-3.1-70B's 327,680 B whatever the model."""
    cfg = SimConfig(instances=(_inst("bf16"),))
    assert (cfg.kv_bytes_per_token, cfg.kv_layers) == (131_072, 32)
    assert SimConfig(instances=(_inst("fp8"),)).kv_bytes_per_token == 65_536


def test_a_given_kv_size_is_kept_and_a_bad_one_refused() -> None:
    assert (
        SimConfig(instances=(_inst("bf16"),), kv_bytes_per_token=1000.0).kv_bytes_per_token == 1000
    )
    with pytest.raises(ConfigError, match="kv_bytes_per_token"):
        SimConfig(instances=(_inst("bf16"),), kv_bytes_per_token=-1.0)
