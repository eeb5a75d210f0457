"""Which reader turns a config.json of a given model_type into a ModelSpec (before the
generic reader of catalog/hf_config.py): families whose layers differ by index."""

from __future__ import annotations

from collections.abc import Callable

from pdplan.catalog.hf_geom import read_gemma4, read_mimo_v2, read_minimax_m3
from pdplan.catalog.hf_hybrid import read_deepseek_v4, read_llama4, read_nemotron_h
from pdplan.catalog.hf_more import MORE_READERS

__all__ = ["FAMILY_READERS"]

FAMILY_READERS: dict[str, Callable] = {
    "nemotron_h": read_nemotron_h,
    "llama4_text": read_llama4,
    "llama4": read_llama4,
    "deepseek_v4": read_deepseek_v4,
    "deepseek_ref": read_deepseek_v4,  # sgl-project's FP8 re-export of DeepSeek-V4
    "gemma4_text": read_gemma4,
    "gemma4": read_gemma4,
    "mimo_v2_flash": read_mimo_v2,
    "minimax_m3": read_minimax_m3,
    **MORE_READERS,
}
