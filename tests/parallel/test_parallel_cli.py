"""`pdplan parallel` and `pdplan kv` end to end (JSON), including the seed KV correction."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_parallel_lists_layouts_and_seed_rule(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(
        capsys,
        ["parallel", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "8", "--json"],
    )
    assert [r["layout"] for r in d["layouts"]] == ["tp8", "tp4-pp2", "tp2-pp4", "tp1-pp8"]
    assert d["seed_rule"]["layout"] == "tp8"
    assert d["comm"]["layout"] == "tp8"
    # two all-reduces of 8192 x 2 B per token per layer, each sending 2 x 7/8 of it (ring)
    assert d["comm"]["totals"]["bytes_per_token_layer"] == pytest.approx(57_344)
    assert isinstance(d["agrees"], bool) and d["verdict"]


def test_parallel_rejects_invalid_layout(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["parallel", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--layout", "tp3"]) == 2
    )
    assert "TP=3 does not divide 64 attention heads" in capsys.readouterr().err


def test_kv_acceptance(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, ["kv", "--model", "llama-3.1-70b", "--tokens", "4000", "--json"])
    assert d["bytes"] == 1_310_720_000 and d["bytes_per_token"] == 327_680
    assert d["seed"]["claimed_bytes"] == 600e6 and d["seed"]["ms"] == pytest.approx(52.4288)
    e = _json(
        capsys,
        [
            "kv",
            "--model",
            "llama-3.1-70b",
            "--tokens",
            "4000",
            "--link-gbps",
            "200",
            "--efficiency",
            "1",
            "--json",
        ],
    )
    assert round(e["time_ms"], 1) == 52.4
    ds = _json(capsys, ["kv", "--model", "deepseek-v3", "--tokens", "100", "--json"])
    assert ds["bytes_per_token"] == 70_272


def test_kv_bad_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kv", "--path", "smoke-signals"]) == 2
    assert "unknown path" in capsys.readouterr().err


def test_kv_refuses_a_layout_the_model_cannot_take_and_flags_a_long_prompt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["kv", "--prefill-layout", "tp3"]) == 2
    assert "TP=3 does not divide 64 attention heads" in capsys.readouterr().err
    assert main(["kv", "--tokens", "200000", "--json"]) == 0
    assert "exceeds llama-3.1-70b's 131,072-token context" in capsys.readouterr().err


def test_parallel_says_when_nothing_fits_and_refuses_a_layout_of_another_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = _json(capsys, ["parallel", "-m", "deepseek-r1", "-g", "l4", "--json"])
    assert d["best_layout"] is None and d["verdict"].startswith("no layout fits: even")
    args = ["parallel", "-m", "llama-3.1-70b", "-g", "h100", "--layout", "tp8-pp2", "-n", "8"]
    assert main(args) == 2
    assert "uses 16 GPUs, --gpus says 8" in capsys.readouterr().err
