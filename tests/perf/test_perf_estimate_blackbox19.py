"""Black-box pass 19, estimate: a closed loop with no more clients than prefill instances never
waits in the prefill queue (the M/D/1 wait was added even for one client)."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.closed_loop import prefill_queue_ttft
from pdplan.perf.costmodel import CostModel
from pdplan.perf.estimate import estimate_disagg

# p1, p_batch, fixed (s), osl, t_dec (s): a prefill share of ~10 % of one client's cycle
P1, FIXED, OSL, T_DEC = 0.1, 0.05, 100, 0.01


@pytest.mark.parametrize(("clients", "n_prefill"), [(1, 1), (1, 3), (2, 2), (4, 4)])
def test_no_queue_wait_when_every_request_finds_an_idle_prefill(
    clients: int, n_prefill: int
) -> None:
    ttft, util = prefill_queue_ttft(P1, P1, FIXED, clients, n_prefill, OSL, T_DEC, 0.0)
    assert ttft == pytest.approx(P1 + FIXED, rel=1e-12)  # the prompt + transfer, no wait
    assert 0.0 < util < 0.2  # the pool is still busy part of the time


@pytest.mark.parametrize(("clients", "n_prefill"), [(2, 1), (5, 4)])
def test_more_clients_than_prefill_instances_still_queue(clients: int, n_prefill: int) -> None:
    ttft, _ = prefill_queue_ttft(P1, P1, FIXED, clients, n_prefill, OSL, T_DEC, 0.0)
    assert ttft > P1 + FIXED * 1.0001  # M/D/1 wait > 0


def test_estimate_disagg_one_client_ttft_is_the_unqueued_path() -> None:
    m, g = get_model("llama-3.1-8b"), get_gpu("h100")
    cm = CostModel(m, g, Layout.parse("tp4"), "vllm")
    isl, osl, kv = 4000, 500, 0.001
    est = estimate_disagg(cm, cm, isl, osl, 1, kv_transfer_s=kv, rounds=float("inf"))
    t_dec = cm.decode_step(1, isl + osl / 2.0)
    late = min(cm.eff.ttft_decode_steps, osl - 1)
    # prompt alone + KV + PD hand-off + first decode step + engine overhead + late steps
    want = cm.prefill_time(isl, 1) + kv + cm.eff.pd_handoff_s + t_dec
    want += cm.eff.ttft_overhead_s + late * t_dec
    assert est.ttft_s == pytest.approx(want, rel=1e-9)
