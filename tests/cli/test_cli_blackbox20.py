"""Black-box round 20: ratio, parallel, models, gpus and kv from the command line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pdplan.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    rc = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_ratio_numbers_tiny_rate_still_needs_one_gpu_per_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --qps 1e-9: 7e-10 prefill GPUs less the 1e-9 rounding slack came out as "0 prefill
    # GPUs + 0 decode GPUs"; any positive rate needs a GPU in each pool
    d = _json(
        capsys,
        ["ratio", "--isl", "4000", "--osl", "500", "--prefill-tps", "8000",
         "--decode-tps", "2000", "--qps", "1e-9"],
    )  # fmt: skip
    assert (d["n_prefill_gpus"], d["n_decode_gpus"]) == (1, 1)
    assert "-> 1 prefill GPU," in d["notes"][-1] and "-> 1 decode GPU" in d["notes"][-1]


def test_ratio_numbers_seed_rounding_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    # seed example A at 10 QPS: 7.14 -> 8 prefill, 3.57 -> 4 decode GPUs; an exact 5.00 stays 5
    d = _json(
        capsys,
        ["ratio", "--isl", "4000", "--osl", "500", "--prefill-tps", "8000",
         "--decode-tps", "2000", "--qps", "10"],
    )  # fmt: skip
    assert (d["n_prefill_gpus"], d["n_decode_gpus"]) == (8, 4)
    d = _json(
        capsys,
        ["ratio", "--isl", "4000", "--osl", "500", "--prefill-tps", "8000",
         "--decode-tps", "2000", "--qps", "10", "--rho", "1"],
    )  # fmt: skip
    assert (d["n_prefill_gpus"], d["n_decode_gpus"]) == (5, 3)


def _ops(d: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["name"]: o for o in d["comm"]["ops"]}


def test_parallel_pp_send_is_one_message_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    # tp1-pp7: each stage's GPU sends the step's activations (8192 x 8192 x 2 B) once to the
    # next stage; the table said "6/micro-batch" and 6x that per GPU (all 6 boundaries' sends)
    d = _json(capsys, ["parallel", "-m", "llama-3.1-70b", "-g", "h100", "-n", "7"])
    assert d["comm"]["layout"] == "tp1-pp7"
    p2p = _ops(d)["stage boundary"]
    assert p2p["bytes_per_call"] == 8192 * 8192 * 2
    assert p2p["count"] == 1
    assert p2p["wire_bytes_per_step"] == p2p["bytes_per_call"]
    # per token per layer of the GPU's own stage: ceil(80 / 7) = 12 layers
    tot = d["comm"]["totals"]
    assert tot["bytes_per_token_layer"] == pytest.approx(8192 * 2 / 12)


def test_parallel_tp_all_reduce_counts_only_the_stages_layers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # tp4-pp2: a GPU all-reduces after attention and FFN on its stage's 40 layers, not all 80
    argv = ["parallel", "-m", "llama-3.1-70b", "-g", "h100", "-n", "8", "--layout", "tp4-pp2"]
    d = _json(capsys, argv)
    ar = _ops(d)["attention out"]
    assert ar["layers"] == 40
    msg = 8192 * 8192 * 2  # tokens x hidden x BF16
    assert ar["wire_bytes_per_step"] == pytest.approx(40 * 2 * 3 / 4 * msg)  # 2(n-1)/n x M
    # and the TP-only layout is as before: 80 layers per GPU
    d = _json(capsys, ["parallel", "-m", "llama-3.1-70b", "-g", "h100", "-n", "8"])
    assert _ops(d)["attention out"]["layers"] == 80
    assert d["comm"]["totals"]["bytes_per_token_layer"] == pytest.approx(57_344)


def test_parallel_says_by_how_much_no_layout_holds_the_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # every layout's weights fit, but no KV cache holds one 10M-token sequence: the verdict
    # said only "cost model unavailable or no layout fits"
    argv = ["parallel", "-m", "llama-3.1-70b", "-g", "h100", "-n", "8", "--context", "10000000"]
    d = _json(capsys, argv)
    assert d["best_layout"] is None
    v = d["verdict"]
    assert v.startswith("no layout holds one 10,000,000-token sequence"), v
    cap = max(r["kv_capacity_tokens"] for r in d["layouts"])
    assert f"'s {cap:,} tokens, is {10_000_000 - cap:,} tokens short" in v


def test_models_long_context_kv_counts_only_growing_layers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # once every window is full a token adds KV only in full-attention layers: mistral-7b-v0.1
    # (all 32 layers windowed) adds 0 B, gemma-2-27b its 23 full layers' 2 x 16 x 128 x 2 B;
    # the average over a 1e9-token context showed 1 B and 188,417 B
    d = _json(capsys, ["models", "mistral-7b-v0.1"])
    assert d["models"][0]["kv_bytes_per_token_long_bf16"] == 0
    d = _json(capsys, ["models", "gemma-2-27b"])
    assert d["models"][0]["kv_bytes_per_token_long_bf16"] == 23 * 2 * 16 * 128 * 2
