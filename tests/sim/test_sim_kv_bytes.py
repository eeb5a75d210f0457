"""SimConfig.kv_bytes: a sequence's KV window-capped with its fixed state, as ModelSpec.kv_bytes
says, for transfers and swaps alike."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_seq_s=5e-5)


def _model_inst(model: str, kv_dtype: str = "bf16") -> InstanceSpec:
    m = get_model(model)
    lay = Layout(tp=8 if m.num_kv_heads % 8 == 0 or m.mla else 4)
    return InstanceSpec("agg", CostModel(m, get_gpu("h200"), lay, "vllm", None, kv_dtype))


@pytest.mark.parametrize(
    "model", ["gemma-3-27b", "gpt-oss-120b", "qwen3-next-80b-a3b", "deepseek-v4-flash"]
)
def test_default_kv_parts_match_the_model(model: str) -> None:
    cfg = SimConfig(instances=(_model_inst(model, "fp8"),))
    m = get_model(model)
    for n in (1, 100, 4096, 200_000):
        assert cfg.kv_bytes(n) == pytest.approx(m.kv_bytes(n, "fp8"), rel=1e-12)


def test_gemma_ships_window_capped_kv() -> None:
    """Gemma-3-27B at 32k tokens: 3.06 GB (`pdplan kv`), not the 16 GB of counting its
    sliding layers as growing."""
    cfg = SimConfig(instances=(_model_inst("gemma-3-27b"),))
    assert cfg.kv_bytes(32_000) == pytest.approx(3.06e9, rel=0.01)
    assert 32_000 * get_model("gemma-3-27b").kv_bytes_per_token() > 5 * cfg.kv_bytes(32_000)


def test_given_parts_are_kept_and_bad_ones_refused() -> None:
    inst = InstanceSpec("agg", STEP)
    cfg = SimConfig(instances=(inst,), kv_bytes_per_token=0.0, kv_windows=((4096, 1e5),))
    assert cfg.kv_bytes(10_000) == 4096 * 1e5  # all-window model (Mistral-7B v0.1)
    cfg = SimConfig(instances=(inst,), kv_bytes_per_token=10.0, kv_state_bytes=1e6)
    assert (cfg.kv_windows, cfg.kv_bytes(3)) == ((), 30 + 1e6)
    for bad in (
        {"kv_windows": ((0, 1.0),)},
        {"kv_windows": ((16, -1.0),)},
        {"kv_state_bytes": -1.0},
        {"kv_bytes_per_token": -1.0, "kv_state_bytes": 5.0},
    ):
        with pytest.raises(ConfigError, match="kv_"):
            SimConfig(instances=(inst,), **{"kv_bytes_per_token": 1.0, **bad})  # type: ignore[arg-type]


def test_a_transfer_moves_window_capped_bytes_and_the_state() -> None:
    """1000 tokens: 1000 x 100 + min(1000, 256) x 1000 + 1e6 B = 1.356e6 B at 1e6 B/s."""
    p = InstanceSpec("prefill", STEP, node=0, nic_bytes_per_s=1e6)
    d = InstanceSpec("decode", STEP, node=1, nic_bytes_per_s=1e6)
    cfg = SimConfig(
        instances=(p, d),
        kv_bytes_per_token=100.0,
        kv_windows=((256, 1000.0),),
        kv_state_bytes=1e6,
        link_latency_s=0.0,
    )
    wl = Workload(np.array([1000], np.int32), np.array([2], np.int32), np.zeros(1))
    assert simulate(cfg, wl).metric("xfer")[0] == pytest.approx(1.356)


def test_a_swap_copies_window_capped_bytes_per_sender() -> None:
    """Swap time per way = kv_bytes(tokens) / (PCIe B/s x senders)."""
    from pdplan.sim.cluster import Simulator

    inst = InstanceSpec("agg", STEP, gpus=8, kv_senders=2, pcie_bytes_per_s=1e6)
    cfg = SimConfig(
        instances=(inst,), kv_bytes_per_token=100.0, kv_windows=((256, 1000.0),),
        kv_state_bytes=1e6, preemption="swap",
    )  # fmt: skip
    wl = Workload(np.array([10], np.int32), np.array([2], np.int32), np.zeros(1))
    sim = Simulator(cfg, wl)
    assert sim.inst[0]._pcie_s(1000) == pytest.approx(1.356e6 / 2e6)


def test_the_hot_loop_callable_equals_kv_bytes() -> None:
    inst = InstanceSpec("agg", STEP)
    flat = SimConfig(instances=(inst,), kv_bytes_per_token=3.0)
    windowed = SimConfig(instances=(inst,), kv_bytes_per_token=3.0, kv_windows=((4, 2.0),))
    for cfg in (flat, windowed):
        f = cfg.kv_bytes_fn()
        for n in (1, 5, np.int64(7)):
            assert f(n) == cfg.kv_bytes(int(n))
    assert windowed.kv_bytes(10) == 30 + 8
