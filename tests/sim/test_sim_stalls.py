"""Configurations that used to leave requests unfinished (a silent stall) or dropped although
an instance could serve them: each must now finish every request."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, RoleSwitch, SimConfig, simulate
from pdplan.sim.gate import ContextGate
from pdplan.workload.core import Workload

M = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_seq_s=5e-5, per_ctx_s=2e-7)


def _wl(inp: list[int], out: list[int], times: list[float]) -> Workload:
    return Workload(np.array(inp, np.int32), np.array(out, np.int32), arrival_s=np.array(times))


def _all_finish(cfg: SimConfig, wl: Workload) -> None:
    s = simulate(cfg, wl, Arrivals("trace")).summary()
    assert (s["finished"], s["dropped"], s["unfinished"]) == (len(wl), 0, 0), s["drop_reasons"]


@pytest.mark.parametrize(
    "extra",
    [{"recv_interval": 2}, {"ctx_gate": ContextGate("batch", 5, tokens=100)}],
)
@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_gates_and_recv_intervals_are_refused_where_they_are_not_modelled(
    role: str, extra: dict[str, object]
) -> None:
    # they once left prompts in a prefill instance's inbox (a stall); they had no effect there
    with pytest.raises(ConfigError, match="modelled on aggregated instances only"):
        InstanceSpec(role, M, **extra)  # type: ignore[arg-type]


def test_a_decode_instance_switched_to_prefill_takes_arrivals() -> None:
    insts = (
        InstanceSpec("prefill", M),
        InstanceSpec("decode", M, node=1),
        InstanceSpec("decode", M, node=2),
    )
    switches = (RoleSwitch(0.5, 2, "prefill"), RoleSwitch(0.6, 0, "decode"))
    cfg = SimConfig(instances=insts, switches=switches, switch_cost_s=0.1)
    _all_finish(cfg, _wl([1000] * 6, [10] * 6, [5.0, 5.05, 5.06, 6.0, 6.05, 6.06]))


def test_a_prompt_as_long_as_the_prefill_kv_pool_is_prefilled() -> None:
    # its KV leaves for the decode side: no slot for a next token is needed on the prefill one
    insts = (
        InstanceSpec("prefill", M, kv_capacity_tokens=1000),
        InstanceSpec("decode", M, kv_capacity_tokens=100_000, node=1),
    )
    _all_finish(SimConfig(instances=insts), _wl([1000, 100], [10, 10], [0.0, 0.5]))


@pytest.mark.parametrize("routing", ["round_robin", "least_tokens", "p2c"])
def test_a_prompt_too_long_for_one_prefill_instance_goes_to_one_it_fits(routing: str) -> None:
    insts = (
        InstanceSpec("prefill", M, kv_capacity_tokens=1_000),
        InstanceSpec("prefill", M, kv_capacity_tokens=100_000, node=1),
        InstanceSpec("decode", M, kv_capacity_tokens=100_000, node=2),
    )
    cfg = SimConfig(instances=insts, routing=routing)
    _all_finish(cfg, _wl([2000] * 4, [10] * 4, [0.0, 1.0, 2.0, 3.0]))
    small = (insts[0], replace(insts[1], kv_capacity_tokens=1_500), insts[2])
    s = simulate(replace(cfg, instances=small), _wl([2000], [10], [0.0]), Arrivals("trace"))
    assert s.summary()["drop_reasons"] == {"prompt exceeds every prefill instance's KV capacity": 1}


def test_pairing_skips_a_decode_instance_too_small_for_the_request() -> None:
    # instance 3 (5,000 tokens of KV) becomes a decode instance at 0.01 s; the 8,000-token
    # request, admitted when only instance 2 (100,000) decoded, must not be paired to it
    insts = (
        InstanceSpec("prefill", M, kv_capacity_tokens=100_000),
        InstanceSpec("prefill", M, kv_capacity_tokens=100_000, node=1),
        InstanceSpec("decode", M, kv_capacity_tokens=100_000, node=2),
        InstanceSpec("prefill", M, kv_capacity_tokens=5_000, node=3),
    )
    cfg = SimConfig(
        instances=insts,
        routing="round_robin",
        pairing="round_robin",
        switch_cost_s=0.1,
        switches=(RoleSwitch(0.01, 3, "decode"),),
    )
    wl = _wl([2000, 8000] + [500] * 10, [20] * 12, [0.0, 0.0] + [5.0 + 0.1 * k for k in range(10)])
    res = simulate(cfg, wl, Arrivals("trace"))
    assert res.summary()["unfinished"] == 0
    assert res.columns["d_inst"][1] == 2  # the only decode instance with room for it
