"""GeForce RTX 4090: Ada whitepaper dense rates at FP32 accumulation, and its spellings."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu


@pytest.mark.parametrize("name", ["rtx-4090", "rtx4090", "RTX 4090", "NVIDIA GeForce RTX 4090"])
def test_rtx_4090_spellings_and_rates(name: str) -> None:
    g = get_gpu(name)
    assert g.name == "rtx-4090"
    assert g.bf16_tflops == 165.2 and g.tflops("fp8") == 330.3  # half-rate FP32 accumulate
    assert g.hbm_bytes_per_s == pytest.approx(1.008e12)  # 21 Gb/s x 384 bit / 8
    assert "whitepaper" in g.source
