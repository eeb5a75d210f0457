"""A config.json without a quantization block takes the dtype its checkpoint name says."""

from __future__ import annotations

import json
from pathlib import Path

from pdplan.catalog.models import get_model

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 4096,
    "vocab_size": 32000,
    "torch_dtype": "bfloat16",
}


def _write(tmp_path: Path, folder: str, extra: dict | None = None) -> str:
    d = tmp_path / folder
    d.mkdir()
    (d / "config.json").write_text(json.dumps({**LLAMA, **(extra or {})}))
    return str(d)


def test_nvfp4_name_without_quant_block_reads_fp4(tmp_path: Path) -> None:
    assert get_model(_write(tmp_path, "Tiny-NVFP4")).weight_dtype == "fp4"
    assert get_model(_write(tmp_path, "Tiny-FP8")).weight_dtype == "fp8"
    assert get_model(_write(tmp_path, "Tiny")).weight_dtype == "bf16"


def test_a_quant_block_wins_over_the_name(tmp_path: Path) -> None:
    q = {"quantization_config": {"quant_method": "fp8"}}
    assert get_model(_write(tmp_path, "Tiny-NVFP4", q)).weight_dtype == "fp8"
