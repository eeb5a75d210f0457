"""KV transfer of hybrid models: the fixed recurrent / SSM state per sequence is reported apart
from the per-token KV, so "KV per token" means what ModelSpec.kv_bytes_per_token means."""

from __future__ import annotations

from typing import Any

import pytest

from pdplan.catalog import get_model
from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.model_spec import ModelSpec
from pdplan.perf.kv_transfer import kv_transfer

# Qwen3-Next-shaped toy: 4 layers, every 4th full attention (3 Gated DeltaNet + 1 full),
# full layers 2 KV heads of 16; linear layers 2 key heads / 4 value heads of 8
TINY_NEXT: dict[str, Any] = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "hidden_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 128,
    "vocab_size": 100,
    "full_attention_interval": 4,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4,
}
# per linear layer: state Hv*dk*dv*4 B = 4*8*8*4 = 1,024 + conv (4-1)*(2*16 + 32)*2 B = 384
STATE = 3 * (1024 + 384)  # 4,224 B per sequence
KV_PER_TOKEN = 1 * 2 * (16 + 16) * 2  # 1 full layer, 2 KV heads, K+V of 16, bf16: 128 B


def _tiny() -> ModelSpec:
    return model_from_hf_config(TINY_NEXT)


def test_state_apart_from_per_token_kv_by_hand() -> None:
    kv = kv_transfer(_tiny(), 10)
    assert kv.state_bytes == STATE
    assert kv.bytes_per_token == KV_PER_TOKEN == _tiny().kv_bytes_per_token("bf16")
    assert kv.total_bytes == 10 * KV_PER_TOKEN + STATE  # the state still travels
    assert any(f"3 linear-attention / SSM layers keep a fixed {STATE:,} B" in n for n in kv.notes)


@pytest.mark.parametrize("tokens", [1, 7, 4000])
def test_per_token_does_not_depend_on_prompt_length(tokens: int) -> None:
    assert kv_transfer(_tiny(), tokens).bytes_per_token == KV_PER_TOKEN


def test_transit_dtype_shrinks_kv_not_state() -> None:
    kv = kv_transfer(_tiny(), 10, transit_dtype="fp8")
    assert kv.bytes_per_token == KV_PER_TOKEN / 2
    assert kv.total_bytes == 10 * KV_PER_TOKEN / 2 + STATE


def test_dense_model_has_no_state_and_no_note() -> None:
    kv = kv_transfer(get_model("llama-3.1-70b"), 4000)
    assert kv.state_bytes == 0 and kv.bytes_per_token == 327_680  # 2*80*8*128*2 B
    assert not any("recurrent state" in n for n in kv.notes)


@pytest.mark.parametrize(
    "name", ["qwen3.5-27b", "nemotron-h-56b", "nemotron-3-super-120b-a12b", "qwen3.5-397b-a17b"]
)
def test_hybrid_presets_agree_with_models_per_token(name: str) -> None:
    m = get_model(name)
    kv = kv_transfer(m, 1)
    assert kv.state_bytes == m.linear_state_bytes() > 0
    assert kv.bytes_per_token == m.kv_bytes_per_token("bf16")  # as `pdplan models` shows


def test_qwen35_27b_numbers() -> None:
    kv = kv_transfer(get_model("qwen3.5-27b"), 1)
    # 16 full layers x 4 KV heads x (256 + 256) x 2 B = 65,536 B per token
    assert kv.bytes_per_token == 65_536
    assert kv.state_bytes == 153_944_064 and kv.total_bytes == 154_009_600


def test_deepseek_v4_raw_window_is_explained() -> None:
    m = get_model("deepseek-v4-pro")
    kv = kv_transfer(m, 1)
    raw = m.csa_window_bytes(1, "bf16")  # 61 compressed layers x 512 x 2 B = 62,464 B
    assert raw == 62_464
    assert kv.bytes_per_token == pytest.approx(m.kv_bytes_per_token("bf16") + raw)
    note = next(n for n in kv.notes if "uncompressed" in n)
    assert "newest 128 tokens" in note and "62,464 B per token" in note
    assert f"{m.csa_window_bytes(128, 'bf16'):,.0f} B per sequence" in note
