"""KV transfer: bytes from the model's shape, parallel links under TP/PP, the seed correction."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_model
from pdplan.catalog.model_spec import ModelSpec
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.kv_transfer import kv_transfer, required_gbps, seed_kv_example


def _llama70b() -> ModelSpec:
    """Llama-3.1-70B preset: 80 layers, 8 KV heads of 128 (checked against models.csv)."""
    return get_model("llama-3.1-70b")


def _dsv3() -> ModelSpec:
    """DeepSeek-V3 preset: 61 layers, MLA latent 512 + rope 64."""
    return get_model("deepseek-v3")


def test_seed_example_corrected() -> None:
    kv = kv_transfer(_llama70b(), 4000, link_gbps=200, efficiency=1.0)
    assert kv.bytes_per_token == 327_680  # 2 * 80 * 8 * 128 * 2 B
    assert kv.total_bytes == 1_310_720_000
    assert kv.bytes_per_token_layer == 4096  # 2 * 8 * 128 * 2 B
    assert round(kv.time_ms, 1) == 52.4  # 1.31072e9 B / 25e9 B/s = 52.43 ms (+20 us latency)
    seed = seed_kv_example(_llama70b())
    assert seed.seed_bytes == 600e6 and seed.seed_ms == 24.0
    assert seed.ms == pytest.approx(52.4288)
    assert seed.factor == pytest.approx(1_310_720_000 / 600e6)


def test_deepseek_mla_bytes_per_token() -> None:
    kv = kv_transfer(_dsv3(), 1000)
    assert kv.bytes_per_token == 70_272  # 61 * (512 + 64) * 2 B
    assert any("one rank per stage" in n for n in kv.notes)
    # MLA: TP does not add links (latent replicated), PP stages do
    assert kv_transfer(_dsv3(), 1000, prefill_layout=Layout(tp=8, ep=8)).senders == 1
    assert kv_transfer(_dsv3(), 1000, prefill_layout=Layout(tp=4, pp=2)).senders == 2


def test_fp8_in_transit_halves_bytes() -> None:
    bf = kv_transfer(_llama70b(), 4000)
    f8 = kv_transfer(_llama70b(), 4000, transit_dtype="fp8")
    assert f8.total_bytes == bf.total_bytes / 2
    assert any("fp8" in n for n in f8.notes)


def test_tp_shards_send_in_parallel() -> None:
    m = _llama70b()
    one = kv_transfer(m, 4000, link_gbps=200, efficiency=1.0, latency_s=0.0)
    tp4 = kv_transfer(
        m,
        4000,
        link_gbps=200,
        efficiency=1.0,
        latency_s=0.0,
        prefill_layout=Layout(tp=4),
        decode_layout=Layout(tp=4),
    )
    assert tp4.senders == 4 and tp4.shard_bytes == 1_310_720_000 / 4
    assert tp4.time_s == pytest.approx(one.time_s / 4)
    # TP=16 > 8 KV heads: replicas do not add links; decode TP=2 is the bottleneck
    mixed = kv_transfer(
        m,
        4000,
        link_gbps=200,
        efficiency=1.0,
        latency_s=0.0,
        prefill_layout=Layout(tp=16),
        decode_layout=Layout(tp=2),
    )
    assert (mixed.senders, mixed.receivers) == (8, 2)
    assert mixed.time_s == pytest.approx(one.time_s / 2)


def test_default_efficiency_and_path() -> None:
    kv = kv_transfer(_llama70b(), 4000)
    # nic default 400 Gb/s at 0.85: 1.31072e9 / (50e9 * 0.85) + 20 us
    assert kv.time_s == pytest.approx(1.31072e9 / (50e9 * 0.85) + 20e-6)
    nv = kv_transfer(_llama70b(), 4000, path="nvlink")
    assert nv.time_s < kv.time_s


def test_bad_input() -> None:
    with pytest.raises(ConfigError, match="unknown path"):
        kv_transfer(_llama70b(), 10, path="carrier-pigeon")
    with pytest.raises(ConfigError, match="tokens"):
        kv_transfer(_llama70b(), 0)
    with pytest.raises(ConfigError, match="unknown KV cache dtype 'fp7'"):
        kv_transfer(_llama70b(), 10, kv_dtype="fp7")


def test_required_gbps() -> None:
    # 10,000 prefill tok/s x 327,680 B x 8 bit = 26.2 Gb/s
    assert required_gbps(327_680, 10_000) == pytest.approx(26.2144)


def test_transit_upcast_refused_and_note_truthful() -> None:
    from pdplan.catalog.models import get_model
    from pdplan.errors import ConfigError
    from pdplan.perf.kv_transfer import kv_transfer

    m = get_model("llama-3.1-70b")
    with pytest.raises(ConfigError, match="wider than the fp8 KV cache"):
        kv_transfer(m, 1000, kv_dtype="fp8", transit_dtype="bf16")
    note = kv_transfer(m, 1000, transit_dtype="fp8").notes[0]
    assert "50% of the bytes (per-tensor scales" in note
