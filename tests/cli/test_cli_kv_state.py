"""`pdplan kv`: a hybrid model's fixed state is its own row, KV per token matches `pdplan models`;
an impossible config.json number is one error line naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main


def test_hybrid_state_row_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kv", "--model", "qwen3.5-27b", "--tokens", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["bytes_per_token"] == 65_536  # 16 full layers x 4 KV heads x 512 x 2 B
    assert d["state_bytes"] == 153_944_064 and d["bytes"] == 154_009_600
    assert main(["kv", "--model", "qwen3.5-27b", "--tokens", "1"]) == 0
    out = capsys.readouterr().out
    assert "65,536 B" in out and "fixed state" in out and "153,944,064 B per sequence" in out


def test_dense_model_has_no_state_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kv", "--model", "llama-3.1-8b", "--tokens", "100"]) == 0
    assert "fixed state" not in capsys.readouterr().out


def test_negative_hidden_size_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": -4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
    }
    path = tmp_path / "z_neg.json"
    path.write_text(json.dumps(cfg))
    for cmd in (["kv", "--model", str(path)], ["models", str(path)]):
        assert main(cmd) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err == f"error: {path}: hidden_size must be a whole number > 0, got -4096\n"
