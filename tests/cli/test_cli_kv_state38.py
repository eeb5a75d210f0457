"""`pdplan parallel` and `pdplan ratio` charge a hybrid model's per-sequence state to KV."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pdplan.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_parallel_decode_batch_counts_state(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["parallel", "--model", "nemotron-h-56b", "--gpu", "h100", "-n", "4"]
    d = _json(capsys, [*argv, "--context", "8192", "--batch", "4000"])
    row = next(r for r in d["layouts"] if r["layout"] == "tp4")
    state = row["state_tokens_per_seq"]
    assert state > 8192  # 54 Mamba2 layers: ~115 MB per sequence per GPU at TP4
    assert row["decode_batch"] == row["kv_capacity_tokens"] // (8192 + state)


def test_ratio_reports_state_and_pure_attention_does_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = _json(capsys, ["ratio", "--model", "qwen3-next-80b-a3b"])
    assert d["state_tokens_per_seq"] > 0
    assert d["decode_limit"] == "kv"  # defaults: ISL 4000 / OSL 500 on H200, the pool binds
    ctx = d["isl"] + d["osl"] / 2
    assert d["decode_batch"] == int(d["kv_capacity_tokens"] // (ctx + d["state_tokens_per_seq"]))
    assert "state_tokens_per_seq" not in _json(capsys, ["ratio", "--model", "llama-3.1-70b"])
