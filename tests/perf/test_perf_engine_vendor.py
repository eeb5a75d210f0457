"""Engines are refused on GPUs of a vendor they do not run on (ROCm builds, TensorRT-LLM)."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel


@pytest.mark.parametrize("engine", ["sglang-rocm", "vllm-rocm", "atom", "mori-sglang"])
def test_rocm_builds_refused_on_nvidia(engine: str) -> None:
    with pytest.raises(ConfigError, match="AMD ROCm build; h100-sxm is NVIDIA"):
        CostModel(get_model("llama-3.1-8b"), get_gpu("h100"), Layout(tp=1), engine)


def test_rocm_build_runs_on_amd_and_trtllm_does_not() -> None:
    m, amd = get_model("llama-3.1-8b"), get_gpu("mi300x")
    assert CostModel(m, amd, Layout(tp=1), "sglang-rocm").engine == "sglang"
    with pytest.raises(ConfigError, match="TensorRT-LLM runs only on NVIDIA"):
        CostModel(m, amd, Layout(tp=1), "trtllm")
