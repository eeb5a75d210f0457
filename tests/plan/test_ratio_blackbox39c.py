"""Ratio, thirty-ninth (semantic) black-box pass, part c: the numbers `pdplan ratio --json`
prints reproduce from each other (GPU-s per request, P and D from the instance times, the
whole instances each QPS needs, D per GPU at that rate), and a sliding-window model's decode
batch is capped by the KV its sequences really hold (window layers keep only their window),
as `pdplan estimate` and `pdplan parallel` size it."""

from __future__ import annotations

import math

import pytest
from tests.cli_json import cli_json as _json

# gemma-3-27b (google/gemma-3-27b-it config.json): 62 layers, 10 full + 52 sliding (window
# 1024), 16 KV heads x head_dim 128, BF16: 2 * 16 * 128 * 2 = 8192 B per token per layer
GEMMA_LAYER_B, GEMMA_FULL, GEMMA_SLIDING, GEMMA_WINDOW = 8192, 10, 52, 1024


def _gpus(layout: str) -> int:
    n = 1
    for part in layout.split("-"):
        kind, num = part.rstrip("0123456789"), part[len(part.rstrip("0123456789")) :]
        n *= int(num) if kind in ("tp", "pp", "dp", "cp") else 1
    return n


def test_window_model_decode_batch_counts_only_the_window() -> None:
    # TP2 on an L40S: every layer's 8192 B split over 2 ranks; a decoding sequence's mean
    # context is ISL + OSL / 2 = 4250 tokens, of which the sliding layers hold 1024
    d = _json("ratio", "--model", "gemma-3-27b", "--gpu", "l40s", "--prefill-layout", "tp2",
              "--decode-layout", "tp2", "--tpot", 1.0, "--json")  # fmt: skip
    per_tok_all = (GEMMA_FULL + GEMMA_SLIDING) * GEMMA_LAYER_B / 2  # the pool's token, B/GPU
    kv_free = d["kv_capacity_tokens"] * per_tok_all  # the pool's bytes per GPU
    ctx = 4000 + 500 / 2
    seq = (GEMMA_FULL * ctx + GEMMA_SLIDING * GEMMA_WINDOW) * GEMMA_LAYER_B / 2
    assert d["decode_limit"] == "kv"
    assert abs(d["decode_batch"] - math.floor(kv_free / seq)) <= 1  # 35, not the 12 of
    assert d["decode_batch"] > 2.5 * (d["kv_capacity_tokens"] // ctx)  # every layer growing
    # `estimate` sizes the same pool at ISL + OSL = 4500 tokens per client (34 sequences)
    e = _json("estimate", "--model", "gemma-3-27b", "--gpu", "l40s", "--layout", "tp2",
              "-c", 2000, "--isl", 4000, "--osl", 500, "--json")  # fmt: skip
    held = e["estimate"]["decode_batch"]
    assert held == pytest.approx(d["decode_batch"], rel=0.1)


def test_model_without_window_keeps_its_kv_cap() -> None:
    d = _json("ratio", "--json")  # llama-3.1-70b on H100, tp4 / tp4, ISL 4000, OSL 500
    assert d["decode_limit"] == "kv"
    assert d["decode_batch"] == d["kv_capacity_tokens"] // 4250  # 483,618 // 4250 = 113


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--model", "gpt-oss-120b", "--gpu", "h100", "--isl", 8000, "--osl", 1000),
        (
            "--model",
            "deepseek-v3",
            "--gpu",
            "h200",
            "--prefill-layout",
            "tp8",
            "--decode-layout",
            "dp8-ep8",
            "--engine",
            "sglang",
        ),
    ],
)
def test_printed_ratio_reproduces(args: tuple[object, ...]) -> None:
    d = _json("ratio", *args, "--json")
    pg, dg = _gpus(d["prefill_layout"]), _gpus(d["decode_layout"])
    isl, osl, rho = d["isl"], d["osl"], d["rho"]
    assert d["prefill"] == pytest.approx(isl / d["prefill_tps"])  # GPU-s per request
    assert d["decode"] == pytest.approx(osl / d["decode_tps"])
    assert d["ratio"] == pytest.approx(d["prefill"] / d["decode"])
    assert d["prefill_tps"] == pytest.approx(isl / (d["prefill_s"] * pg))  # tok/s per GPU
    assert d["decode_tps"] == pytest.approx(d["decode_batch"] / d["decode_step_s"] / dg)
    assert d["decode_step_s"] <= d["tpot_s"]
    per_p = rho / d["prefill_s"]  # QPS one prefill instance carries at utilisation rho
    per_d = rho * d["decode_batch"] / (osl * d["decode_step_s"])  # and one decode instance
    for p in d["qps_sweep"]["points"]:
        q = p["qps"]
        assert p["n_prefill"] == max(1, math.ceil(q / per_p - 1e-9)), p
        assert p["n_decode"] == max(1, math.ceil(q / per_d - 1e-9)), p
        assert p["decode_tps_per_gpu"] == pytest.approx(q * osl / (p["n_decode"] * dg))
        assert p["decode_batch"] <= d["decode_batch"] + 1e-9  # Little's law, below the cap
        assert p["ratio"] == pytest.approx(p["prefill_gpus"] / p["decode_gpus"])
