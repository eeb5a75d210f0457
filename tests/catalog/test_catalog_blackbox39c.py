"""Catalog, thirty-ninth (semantic) black-box pass, part c: `pdplan models` against the real
config.json files in shared/data/reference (skipped without them): KV bytes per token worked
by hand (GQA 2 L n_kv d b, MLA L (kv_lora_rank + rope) b, sliding layers within their window)
and a dense model's parameter count summed from its config, and `pdplan gpus` against the
reference GPU table."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli_json import cli_json as _json

REF = Path(__file__).resolve().parents[3] / "shared" / "data" / "reference"
pytestmark = pytest.mark.skipif(not REF.is_dir(), reason="shared/data/reference not present")


def _cfg(name: str) -> tuple[Path, dict[str, Any]]:
    path = REF / "hf_configs" / f"{name}_config.json"
    if not path.is_file():
        pytest.skip(f"{path.name} not present")
    return path, json.loads(path.read_text())


def _kv(c: dict[str, Any]) -> tuple[float, float]:
    """(in-window, long-context) KV B/token in BF16 from the config, by hand."""
    L = c["num_hidden_layers"]
    if c.get("kv_lora_rank"):
        per = (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2
        return L * per, L * per
    d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    per = 2 * c["num_key_value_heads"] * d * 2
    sliding = sum(t == "sliding_attention" for t in c.get("layer_types") or [])
    return L * per, (L - sliding) * per


@pytest.mark.parametrize(
    "name",
    [
        "meta-llama--Meta-Llama-3.1-8B",
        "meta-llama--Meta-Llama-3.1-70B",
        "Qwen--Qwen3-32B",
        "mistralai--Mixtral-8x7B-v0.1",
        "deepseek-ai--DeepSeek-V3",
        "moonshotai--Kimi-K2-Instruct",
        "openai--gpt-oss-120b",
    ],
)
def test_kv_bytes_per_token_by_hand(name: str) -> None:
    path, c = _cfg(name)
    m = _json("models", path, "--json")["models"][0]
    in_window, long = _kv(c)
    assert m["kv_bytes_per_token_in_window_bf16"] == in_window
    assert m["kv_bytes_per_token_long_bf16"] == long
    k = _json("kv", "--model", path, "--tokens", 4000, "--kv-dtype", "fp8", "--json")
    win = c.get("sliding_window") if long != in_window else None
    want = long * 4000 + (in_window - long) * min(4000, win or 4000)  # window layers capped
    assert k["bytes"] == pytest.approx(want / 2)  # FP8: one byte an element
    # NIC at 400 Gb/s x 0.85, plus 20 us: time = bytes / rate + latency
    assert k["time_s"] == pytest.approx(k["bytes"] / (400e9 / 8 * 0.85) + 20e-6)


def test_dense_params_sum_from_the_config() -> None:
    path, c = _cfg("meta-llama--Meta-Llama-3.1-70B")
    h, i, L, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    d = h // c["num_attention_heads"]
    attn = 2 * h * h + 2 * h * c["num_key_value_heads"] * d  # q, o, and k, v
    total = L * (attn + 3 * h * i) + 2 * v * h  # SwiGLU, untied embedding and LM head
    m = _json("models", path, "--json")["models"][0]
    assert m["total_params_b"] == pytest.approx(total / 1e9, abs=0.006)  # 70.55 B
    assert m["active_params_b"] == m["total_params_b"]


def test_gpus_match_the_reference_table() -> None:
    got = {g["name"]: g for g in _json("gpus", "--json")["gpus"]}
    ref = {r["gpu"]: r for r in csv.DictReader((REF / "gpus.csv").open())}
    pairs = {"H100-SXM": "h100-sxm", "H200-SXM": "h200-sxm", "B200-SXM": "b200-sxm",
             "A100-80GB-SXM": "a100-sxm", "MI300X": "mi300x", "L40S": "l40s"}  # fmt: skip
    for ref_name, name in pairs.items():
        r, g = ref[ref_name], got[name]
        assert g["bf16_tflops"] == pytest.approx(float(r["bf16_dense_tflops"]), rel=1e-3)
        assert g["hbm_tbps"] == pytest.approx(float(r["hbm_bw_tbps"]), rel=1e-3)
        assert g["scaleup_domain"] >= 1 and g["nic_gbps"] > 0
        if r["fp8_dense_tflops"]:
            assert g["fp8_tflops"] == pytest.approx(float(r["fp8_dense_tflops"]), rel=1e-3)
