"""CLI: `pdplan models` gives sliding-window models' KV per token at long context and in window."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main


def test_sliding_window_model_shows_both_kv_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "gpt-oss-120b", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["models"][0]
    # 36 layers x 8 KV heads x 64 dim x 2 (K, V) x 2 B = 73,728 in window; only the 18 full
    # layers grow past it: 36,864 B/token (the reference models.csv figure)
    assert row["kv_bytes_per_token_in_window_bf16"] == 73_728
    assert "kv_bytes_per_token_bf16" not in row  # named for what it counts (in window)
    assert row["kv_bytes_per_token_long_bf16"] == pytest.approx(36_864, abs=1)
    assert main(["models", "gpt-oss-120b"]) == 0
    out = capsys.readouterr().out
    assert "36,864" in out and "73,728" in out
