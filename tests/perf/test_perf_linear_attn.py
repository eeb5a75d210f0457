"""Linear-attention / SSM mixer cost: chunked prefill FLOPs and the recurrent decode count."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pdplan.catalog.model_parts import LinearAttnSpec
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import Efficiency
from pdplan.perf.hardware import Hardware
from pdplan.perf.linear_attn import linear_attn_time as _linear_attn
from pdplan.perf.linear_attn import linear_prefill_flops as _linear_prefill_flops
from pdplan.perf.step import BatchShape

# 1 Hk head, 2 Hv heads, dk 4, dv 8, conv width 4: conv channels 2*1*4 + 2*8 = 24
TINY = LinearAttnSpec(
    num_key_heads=1, num_value_heads=2, key_head_dim=4, value_head_dim=8, conv_kernel=4
)
CONV = 2 * 4 * 24  # 192 FLOPs per token
# compute-bound: 1 TFLOP/s attention peak, effectively unlimited HBM
HW = Hardware(gemm_flops=1e12, moe_flops=1e12, attn_flops=1e12, hbm=1e30, wb=2, mb=2, kvb=2)
EFF = Efficiency()
RATE = HW.attn_flops * EFF.attn_eta


def _gdn():
    return replace(get_model("qwen3.5-27b"), linear_attn=TINY)


def _mamba2():
    return replace(get_model("nemotron-3-nano-30b-a3b"), linear_attn=TINY)


def test_gated_deltanet_prefill_flops_by_hand() -> None:
    # per Hv head, C = 64: 6*dk*dv + 2*C*(3*dk + 2*dv) = 192 + 128*28 = 3776
    assert _linear_prefill_flops(_gdn()) == pytest.approx(2 * 3776 + CONV)


def test_mamba2_ssd_prefill_flops_by_hand() -> None:
    # per head, Q = 128: 4*N*P + 2*Q*P = 128 + 2048; per group 2*Q*N = 1024
    assert _linear_prefill_flops(_mamba2()) == pytest.approx(2 * 2176 + 1024 + CONV)


@pytest.mark.parametrize("model", [_gdn(), _mamba2()])
def test_prefill_time_counts_chunked_flops(model) -> None:
    lay = Layout(tp=2)
    shape = BatchShape(prefill_tokens=1000, prefill_pairs=1000 * 1001 / 2, prefill_seqs=1)
    want = _linear_prefill_flops(model) / 2 * 1000 / RATE
    assert _linear_attn(model, shape, lay, EFF, HW) == pytest.approx(want)


@pytest.mark.parametrize("model", [_gdn(), _mamba2()])
def test_decode_keeps_recurrent_count(model) -> None:
    lay = Layout(tp=2)
    shape = BatchShape(decode_seqs=16, decode_ctx=16 * 500)
    recurrent = 4.0 * (2 / 2) * 4 * 8 * 16  # 4*Hv*dk*dv per decode token, Hv split by TP
    assert _linear_attn(model, shape, lay, EFF, HW) == pytest.approx(recurrent / RATE)
    # a mixed step adds the prefill and decode FLOPs
    mixed = shape._replace(prefill_tokens=100, prefill_pairs=5050.0, prefill_seqs=1)
    prefill = _linear_prefill_flops(model) / 2 * 100
    assert _linear_attn(model, mixed, lay, EFF, HW) == pytest.approx((recurrent + prefill) / RATE)


def test_state_traffic_bound_unchanged() -> None:
    # slow HBM: each sequence reads + writes its fp32 state, Hv*dk*dv*4 B per rank
    hw = replace(HW, attn_flops=1e30, hbm=1e9)
    shape = BatchShape(prefill_tokens=10, prefill_pairs=55.0, prefill_seqs=1, decode_seqs=3)
    want = 2.0 * (1 * 4 * 8 * 4.0) * 4 / (hw.hbm * EFF.mem_eta)
    assert _linear_attn(_gdn(), shape, Layout(tp=2), EFF, hw) == pytest.approx(want)


def test_chunked_prefill_costs_more_than_recurrence_for_real_models() -> None:
    for name in ("qwen3.5-397b-a17b", "nemotron-3-nano-30b-a3b", "kimi-k3"):
        m = get_model(name)
        la = m.linear_attn
        assert la is not None
        recurrent = 4.0 * la.num_value_heads * la.key_head_dim * la.value_head_dim
        assert 1.2 * recurrent < _linear_prefill_flops(m) < 4.0 * recurrent
