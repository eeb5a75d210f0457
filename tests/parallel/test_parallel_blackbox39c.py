"""`pdplan parallel`, thirty-ninth (semantic) black-box pass, part c: a sliding-window
model's decode batch holds only its window layers' window (as `ratio` and `estimate` size
it), every listed layout obeys the documented rules, and the comm table's bytes match the
ring all-reduce and all-to-all formulas worked by hand."""

from __future__ import annotations

import math

import pytest
from tests.cli_json import cli_json as _json


def test_window_model_batch_counts_only_the_window() -> None:
    # gemma-3-27b: 10 full + 52 sliding (window 1024) layers, 8192 B per token per layer in
    # BF16, halved per GPU at TP2; at a 4250-token context a sequence holds
    # (10 * 4250 + 52 * 1024) * 4096 B per GPU, not 62 * 4250 * 4096
    d = _json("parallel", "--model", "gemma-3-27b", "--gpu", "l40s", "--gpus", 2,
              "--context", 4250, "--batch", 4096, "--json")  # fmt: skip
    row = next(r for r in d["layouts"] if r["layout"] == "tp2")
    kv_free = row["kv_capacity_tokens"] * 62 * 4096
    want = math.floor(kv_free / ((10 * 4250 + 52 * 1024) * 4096))
    assert abs(row["decode_batch"] - want) <= 1
    assert row["decode_batch"] > 2.5 * (row["kv_capacity_tokens"] // 4250)


@pytest.mark.parametrize("model", ["qwen2.5-7b", "llama-3.2-3b", "qwen3-30b-a3b"])
def test_listed_layouts_obey_the_rules(model: str) -> None:
    heads = {
        "qwen2.5-7b": (28, 4, 28, 0),
        "llama-3.2-3b": (24, 8, 28, 0),
        "qwen3-30b-a3b": (32, 4, 48, 128),
    }[model]  # heads, KV heads, layers, experts
    nh, nkv, layers, experts = heads  # (config.json values)
    d = _json("parallel", "--model", model, "--gpu", "h200", "--gpus", 8, "--json")
    got = {r["layout"] for r in d["layouts"]}
    for name in got:
        part = {p.rstrip("0123456789"): int(p[len(p.rstrip("0123456789")) :]) for p in
                name.split("-")}  # fmt: skip
        tp, pp, ep = part.get("tp", 1), part.get("pp", 1), part.get("ep", 1)
        assert nh % tp == 0 and (nkv % tp == 0 or tp % nkv == 0), name
        assert pp <= layers and (ep == 1 or experts % ep == 0), name
    if not experts:  # dense: every TP x PP of 8 GPUs the heads allow is there
        want = {f"tp{t}-pp{8 // t}" if t < 8 else "tp8" for t in (1, 2, 4, 8) if nh % t == 0}
        assert want == got


def test_comm_bytes_match_the_formulas() -> None:
    # llama-3.1-8b (hidden 4096, 32 layers) at TP8, 8192 tokens, BF16: a ring all-reduce of
    # M = 8192 * 4096 * 2 B moves 2 (n - 1) / n * M per GPU, twice per layer
    d = _json("parallel", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", 8,
              "--layout", "tp8", "--tokens", 8192, "--json")  # fmt: skip
    m = 8192 * 4096 * 2
    ar = [op for op in d["comm"]["ops"] if op["collective"] == "all-reduce"]
    assert [op["bytes_per_call"] for op in ar] == [m, m]
    assert all(op["wire_bytes_per_call"] == pytest.approx(2 * 7 / 8 * m) for op in ar)
    assert d["comm"]["totals"]["bytes_per_step"] == pytest.approx(2 * 32 * 2 * 7 / 8 * m)
    # DeepSeek-V3 wide EP (16 ranks, DP attention): each rank dispatches its 4096 / 16 tokens'
    # top-8 copies of hidden 7168 in BF16, (ep - 1) / ep of them off-rank, on 58 MoE layers
    d = _json("parallel", "--model", "deepseek-v3", "--gpu", "h200", "--gpus", 16,
              "--layout", "tp1-dp16-ep16", "--tokens", 4096, "--json")  # fmt: skip
    a2a = [op for op in d["comm"]["ops"] if op["collective"] == "all-to-all"]
    msg = 4096 / 16 * 8 * 7168 * 2 * 15 / 16
    assert [op["wire_bytes_per_call"] for op in a2a] == pytest.approx([msg, msg])
    assert all(op["layers"] == 58 for op in a2a)
