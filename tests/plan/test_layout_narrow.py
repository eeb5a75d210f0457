"""The default layout falls back to TP 2 / 1 for models whose heads no TP of 4 or 8 divides."""

from __future__ import annotations

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.plan.layout_pick import default_layout


def test_phi4_and_qwen_half_b_get_a_narrow_default() -> None:
    picked: list[str] = []
    assert default_layout(get_model("phi-4"), get_gpu("h100"), picked=picked).tp == 2
    assert "TP=4 does not divide 10 KV heads" in picked[0]
    assert default_layout(get_model("qwen2.5-0.5b"), get_gpu("h100")).tp == 2


def test_models_tp4_divides_keep_the_tp4_default() -> None:
    assert default_layout(get_model("llama-3.1-8b"), get_gpu("h100")).tp == 4


def test_the_note_names_every_layout_passed_over_once() -> None:
    picked: list[str] = []
    lay = default_layout(get_model("deepseek-v3"), get_gpu("l40s"), picked=picked)
    note = picked[0]
    assert str(lay) == "tp8" or "tp8 does not fit (needs" in note  # the middle one is named
    assert "does not fit (does not fit" not in note
