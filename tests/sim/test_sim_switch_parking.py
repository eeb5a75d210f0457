"""Role switches that leave no decode instance for a while: finished prefills wait (holding
their KV) until a decode instance is back, instead of crashing the run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.sim import Arrivals, RoleSwitch, SimConfig, simulate

from .helpers import lengths_workload, xpyd


@pytest.mark.parametrize("transfer", ["after", "layerwise"])
def test_swapping_the_only_decode_parks_prefilled_requests(transfer: str) -> None:
    """2P1D; at 5 s prefill0 -> decode and decode0 -> prefill: no decode instance until
    prefill0 has drained and switched. Prompts prefilled in that window wait for it."""
    sw = (RoleSwitch(5.0, 0, "decode"), RoleSwitch(5.0, 2, "prefill"))
    cfg = SimConfig(instances=xpyd(2, 1), switches=sw, transfer_mode=transfer)
    res = simulate(cfg, lengths_workload(400, seed=3, isl=2000, osl=200), Arrivals("poisson", 8))
    assert res.summary()["finished"] == 400 and res.dropped == 0
    back = min(t for t, i, role in res.switches if i == 0 and role == "decode")
    cols = res.columns
    parked = (cols["pf_start"] >= 5.0) & (cols["pf_end"] < back)  # paired after 5 s
    first = cols["first"]
    assert parked.sum() > 5
    assert np.all(first[parked] >= back)


@pytest.mark.parametrize("transfer", ["after", "layerwise"])
def test_draining_prefill_full_of_parked_kv_does_not_deadlock(transfer: str) -> None:
    """prefill0's KV (12k tokens) fills with parked requests while prompts still queue there:
    draining, it gives that KV up (they are prefilled again elsewhere), finishes its queue,
    switches, and becomes the decode instance everyone waited for."""
    inst = tuple(
        replace(i, kv_capacity_tokens=12_000) if i.role == "prefill" else i for i in xpyd(2, 1)
    )
    sw = (RoleSwitch(5.0, 0, "decode"), RoleSwitch(5.0, 2, "prefill"))
    cfg = SimConfig(instances=inst, switches=sw, transfer_mode=transfer)
    res = simulate(cfg, lengths_workload(400, seed=3, isl=2000, osl=200), Arrivals("poisson", 12))
    assert res.summary()["finished"] == 400 and res.dropped == 0
    assert res.preemptions > 0  # parked KV given up and recomputed
    assert [(i, role) for _, i, role in res.switches] == [(0, "decode"), (2, "prefill")]


def test_switch_schedule_with_the_real_cost_model() -> None:
    """The tester's `pdplan simulate ... 2P:tp4+1D:tp4 --switch 20:prefill0:decode
    --switch 20:decode0:prefill` case, through the sim API."""
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.memory import plan_memory
    from pdplan.sim import InstanceSpec
    from pdplan.workload import synthesize

    m, g, lay = get_model("llama-3.1-70b"), get_gpu("h200"), Layout(tp=4)
    cm, cap = CostModel(m, g, lay, "vllm"), plan_memory(m, g, lay).kv_capacity_tokens
    inst = tuple(
        InstanceSpec(role, cm, kv_capacity_tokens=int(cap), node=k, gpus=4)
        for k, role in enumerate(("prefill", "prefill", "decode"))
    )
    sw = (RoleSwitch(20.0, 0, "decode"), RoleSwitch(20.0, 2, "prefill"))
    cfg = SimConfig(instances=inst, switches=sw, kv_bytes_per_token=m.kv_bytes_per_token("bf16"))
    wl = synthesize(n=400, rate=4.0, input="2000", output="200")
    res = simulate(cfg, wl, Arrivals("poisson", rate=4))
    assert res.summary()["finished"] == 400
    assert [(i, role) for _, i, role in res.switches] == [(0, "decode"), (2, "prefill")]


class _Flipper:
    """Flips every instance that is not already switching, every 3 s, with no guard: both
    instances of a 1P1D cluster switch at once, leaving no prefill and no decode."""

    interval_s = 3.0

    def decide(self, now_s: float, view: list[dict]) -> list[RoleSwitch]:
        return [
            RoleSwitch(now_s, i, "decode" if v["role"] == "prefill" else "prefill")
            for i, v in enumerate(view)
            if not v["draining"]
        ]


@pytest.mark.parametrize("transfer", ["after", "layerwise"])
def test_unguarded_flipping_policy_finishes_every_request(transfer: str) -> None:
    cfg = SimConfig(
        instances=xpyd(1, 1), policy=_Flipper(), switch_cost_s=0.5, transfer_mode=transfer
    )
    res = simulate(cfg, lengths_workload(300, seed=3, isl=2000, osl=200), Arrivals("poisson", 4))
    s = res.summary()
    assert s["finished"] == 300 and res.dropped == 0
    assert len(res.switches) > 10
    # a prefill instance that drains gives up the KV it held for parked requests: recomputed
    assert res.preemptions > 0
