"""`--mem-fraction` on estimate, simulate and ratio: the engine's KV-sizing flag, as it reads it."""

from __future__ import annotations

import json

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.cli import main
from pdplan.parallel.layout import Layout
from pdplan.perf.memory import GiB, plan_memory
from pdplan.perf.sglang_memory import sglang_mem_fraction

EST = ("estimate", "--model", "qwen3-32b", "--gpu", "h100", "--layout", "tp2", "--isl", "2048",
       "--osl", "256", "-c", "64", "--json")  # fmt: skip


def _kv(capsys: pytest.CaptureFixture[str], *args: str) -> int:
    assert main([*EST, *args]) == 0
    return int(json.loads(capsys.readouterr().out)["memory"]["kv_capacity_tokens"])


def test_estimate_sizes_kv_as_the_engine_does(capsys: pytest.CaptureFixture[str]) -> None:
    m, g, lay = get_model("qwen3-32b"), get_gpu("h100"), Layout(tp=2)
    sglang = _kv(capsys, "--engine", "sglang")
    frac = sglang_mem_fraction(g.hbm_gib, lay, chunk=8192)
    assert sglang == plan_memory(m, g, lay, mem_fraction=frac, context=2304).kv_capacity_tokens
    assert _kv(capsys, "--engine", "vllm") > sglang  # 0.9 of the device against 0.834
    trt = _kv(capsys, "--engine", "trtllm")  # 0.9 of what the weights leave free
    free = plan_memory(m, g, lay, mem_fraction=0.9, of_free=True, context=2304)
    assert trt == free.kv_capacity_tokens


def test_mem_fraction_overrides_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    low, high = (_kv(capsys, "--engine", "sglang", "--mem-fraction", f) for f in ("0.7", "0.95"))
    default = _kv(capsys, "--engine", "sglang")
    assert low < default < high
    # 0.25 of 80 GiB more on each GPU, each holding its half of a token's BF16 KV at TP2
    per_tok_per_gpu = get_model("qwen3-32b").kv_bytes_per_token("bf16") / 2
    assert high - low == pytest.approx(0.25 * 80 * GiB / per_tok_per_gpu, rel=0.01)


def test_mem_fraction_out_of_range_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*EST, "--mem-fraction", "1.2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--mem-fraction" in err and err.count("\n") == 1


def test_simulate_mem_fraction_changes_what_runs(capsys: pytest.CaptureFixture[str]) -> None:
    wl = "closed:c=256,n=600,isl=4096,osl=256"
    base = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1",
            "--engine", "sglang", "--workload", wl, "--json"]  # fmt: skip
    running = []
    for frac in ("0.5", "0.95"):
        assert main([*base, "--mem-fraction", frac]) == 0
        running.append(json.loads(capsys.readouterr().out)["instances"][0]["mean_running"])
    assert running[0] < running[1]  # a smaller pool holds fewer of the 256 clients at once


def test_the_default_layout_is_picked_with_the_engines_kv_sizing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["estimate", "--model", "mistral-large-2407", "--gpu", "h100", "--isl", "8000",
            "--osl", "1000", "-c", "16", "--json"]  # fmt: skip
    picked = {}
    for eng in ("vllm", "sglang"):
        assert main([*args, "--engine", eng]) == 0
        picked[eng] = json.loads(capsys.readouterr().out)
    # 123B BF16 at TP4 leaves 0.9 of an H100 room for 16 requests of 9,000 tokens, SGLang's
    # 0.825 room for 8: SGLang's default widens to TP8, and says why
    assert picked["vllm"]["layout"] == "tp4"
    assert picked["sglang"]["layout"] == "tp8"
    assert "tp4 leaves KV room for only" in picked["sglang"]["layout_note"]
    assert main([*args, "--engine", "sglang", "--mem-fraction", "0.9"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"] == "tp4"  # the flag set as vLLM's


def _ratio(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["ratio", "--engine", "sglang", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ratio_mem_fraction_sizes_the_decode_pool(capsys: pytest.CaptureFixture[str]) -> None:
    low, default, high = (
        _ratio(capsys, *a)["kv_capacity_tokens"]
        for a in (("--mem-fraction", "0.7"), (), ("--mem-fraction", "0.95"))
    )
    assert low < default < high
    # Llama-3.1-70B BF16 on H100 TP4: 0.25 of 80 GiB more per GPU, a quarter of a token's KV each
    per_tok_per_gpu = get_model("llama-3.1-70b").kv_bytes_per_token("bf16") / 4
    assert high - low == pytest.approx(0.25 * 80 * GiB / per_tok_per_gpu, rel=0.01)


def test_ratio_mem_fraction_is_refused_in_numbers_mode(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ratio", "--prefill-tps", "8000", "--decode-tps", "2000", "--isl", "4000", "--osl",
            "500", "--mem-fraction", "0.8"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--mem-fraction" in err and err.count("\n") == 1


def test_a_given_layout_is_checked_with_the_engines_kv_sizing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Llama-3.1-70B BF16 at TP2 on H100s (70.6 GB of weights per GPU): vLLM's 0.9 leaves KV
    # for 24,866 tokens, 0.86 for 3,894, short of one 4,500-token request; the refusal and its
    # hint (a wider layout, FP8) are worked out with the flag as given
    base = ["ratio", "--model", "llama-3.1-70b", "--gpu", "h100", "--decode-layout", "tp2",
            "--isl", "4000", "--osl", "500", "--json"]  # fmt: skip
    assert main(base) == 0
    capsys.readouterr()
    assert main([*base, "--mem-fraction", "0.86"]) == 2
    err = capsys.readouterr().err
    assert "--decode-layout tp2" in err and "short by 606" in err and err.count("\n") == 1
    assert "would fit: --decode-layout tp4" in err
