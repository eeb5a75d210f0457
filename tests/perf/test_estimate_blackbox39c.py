"""`pdplan estimate`, thirty-ninth (semantic) black-box pass, part c: the memory it prints
adds up to the device, weights are params x dtype bytes / TP, the KV capacity is the KV
memory over the per-token KV, FP8 KV doubles it, TPOT stays above the weights' read time,
the closed loop obeys Little's law, and more clients never lower TPOT."""

from __future__ import annotations

from typing import Any

import pytest
from tests.cli_json import cli_json as _json

from pdplan.cli import main

GiB = 2**30


def _est(*args: object) -> dict[str, Any]:
    return _json("estimate", "--isl", 2048, "--osl", 256, *args, "--json")


@pytest.mark.parametrize(
    "model,gpu,layout,hbm_tbps",
    [
        ("llama-3.1-70b", "h100", "tp4", 3.35),
        ("qwen3-32b", "l40s", "tp4", 0.864),
        ("llama-3.1-8b", "mi300x", "tp1", 5.3),
    ],
)
def test_memory_and_bounds(model: str, gpu: str, layout: str, hbm_tbps: float) -> None:
    params_b = {"llama-3.1-70b": 70.55, "qwen3-32b": 32.76, "llama-3.1-8b": 8.03}[model]
    tp = int(layout[2:])
    d = _est("--model", model, "--gpu", gpu, "--layout", layout, "-c", 32)
    mem, e = d["memory"], d["estimate"]
    parts = ("weights_gib", "activation_gib", "runtime_gib", "reserve_gib", "kv_gib")
    assert sum(mem[k] for k in parts) == pytest.approx(mem["hbm_gib"], abs=0.01)
    assert mem["weights_gib"] == pytest.approx(params_b * 1e9 * 2 / tp / GiB, rel=0.002)
    cap = mem["kv_gib"] * GiB / mem["kv_bytes_per_token_per_gpu"]
    assert mem["kv_capacity_tokens"] == pytest.approx(cap, rel=1e-4)
    assert e["tpot_ms"] / 1e3 > mem["weights_gib"] * GiB / (hbm_tbps * 1e12)  # roofline
    assert e["throughput_rps"] * e["e2e_s"] == pytest.approx(32, rel=1e-3)  # Little
    assert e["e2e_s"] == pytest.approx(e["ttft_ms"] / 1e3 + 255 * e["tpot_ms"] / 1e3)
    per_gpu = e["throughput_rps"] * 256 / d["gpus"]
    assert d["output_tokens_per_s_per_gpu"] == pytest.approx(per_gpu)
    fp8 = _est("--model", model, "--gpu", gpu, "--layout", layout, "-c", 32, "--kv-dtype", "fp8")
    assert fp8["memory"]["kv_capacity_tokens"] == pytest.approx(2 * cap, rel=1e-4)


def test_more_clients_never_lower_tpot() -> None:
    prev = None
    for c in (1, 4, 16, 64, 256):
        e = _est("--model", "gpt-oss-120b", "--gpu", "h100", "--layout", "tp2", "-c", c)
        e = e["estimate"]
        if prev is not None:
            assert e["tpot_ms"] >= prev["tpot_ms"] * 0.999
            assert e["ttft_ms"] >= prev["ttft_ms"] * 0.999
        prev = e


def test_shortfall_is_what_the_parts_add_up_to(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "--layout", "tp1"])
    err = capsys.readouterr().err
    assert rc == 2
    # 70.55e9 BF16 params = 131.4 GiB; + 1.5 activations + 1.5 runtime + 8.0 reserve
    assert "needs 142.4 GiB" in err and "short by 62.4 GiB" in err and "weights 131.4" in err
