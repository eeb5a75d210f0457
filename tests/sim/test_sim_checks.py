"""Specs the simulator cannot run are refused with a named error when built, and a switch
schedule is refused only when it ends without a prefill or a decode instance."""

from __future__ import annotations

import pytest

from pdplan.errors import ConfigError, InputError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, RoleSwitch, SimConfig, simulate

from .helpers import lengths_workload

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)


@pytest.mark.parametrize(
    "kw",
    [
        {"step_model": None},
        {"max_batch": 2.5},
        {"kv_capacity_tokens": float("nan")},
        {"prefill_token_budget": 0},
        {"nvlink_bytes_per_s": True},
        {"name": 5},
        {"pcie_bytes_per_s": 0.0},
        {"nic_bytes_per_s": float("inf")},
        {"chunk_budget": 0},
        {"node": "a"},
    ],
)
def test_bad_instance_fields_are_refused(kw: dict) -> None:
    base = {"role": "agg", "step_model": STEP}
    with pytest.raises(ConfigError):
        InstanceSpec(**{**base, **kw})


@pytest.mark.parametrize(
    "kw",
    [
        {"instances": InstanceSpec("agg", STEP)},
        {"instances": ()},
        {"ttft_slo_s": -1.0},
        {"tpot_slo_s": float("nan")},
        {"seed": "x"},
        {"link_latency_s": -1e-6},
    ],
)
def test_bad_config_fields_are_refused(kw: dict) -> None:
    with pytest.raises(ConfigError):
        SimConfig(**{"instances": (InstanceSpec("agg", STEP),), **kw})


def test_a_list_of_instances_is_taken_as_a_tuple() -> None:
    cfg = SimConfig(instances=[InstanceSpec("agg", STEP)])  # type: ignore[arg-type]
    assert isinstance(cfg.instances, tuple)


class _Policy:
    def __init__(self, interval_s: float, switches: list[RoleSwitch]) -> None:
        self.interval_s, self._sw = interval_s, switches

    def decide(self, now_s: float, view: list) -> list[RoleSwitch]:
        out, self._sw = self._sw, []
        return out


def _pd() -> tuple[InstanceSpec, ...]:
    return (InstanceSpec("prefill", STEP, name="p0"), InstanceSpec("decode", STEP, name="d0"))


def test_policies_need_a_positive_interval_and_a_disaggregated_cluster() -> None:
    with pytest.raises(ConfigError, match="interval_s"):
        SimConfig(instances=_pd(), policy=_Policy(0.0, []))
    with pytest.raises(ConfigError, match="disaggregated"):
        SimConfig(instances=(InstanceSpec("agg", STEP),), policy=_Policy(1.0, []))


def test_a_policys_switch_of_an_unknown_instance_is_a_named_error() -> None:
    cfg = SimConfig(instances=_pd(), policy=_Policy(0.5, [RoleSwitch(0.5, 99, "decode")]))
    with pytest.raises(ConfigError, match="the policy's role switch"):
        simulate(cfg, lengths_workload(20), Arrivals("poisson", rate=5.0))


def test_a_schedule_that_comes_back_to_both_roles_runs() -> None:
    # decode0 -> prefill at 2 s (no decode for a while), prefill0 -> decode at 4 s
    sw = (RoleSwitch(2.0, 1, "prefill"), RoleSwitch(4.0, 0, "decode"))
    res = simulate(
        SimConfig(instances=_pd(), switches=sw, switch_cost_s=0.5),
        lengths_workload(60),
        Arrivals("poisson", rate=10.0),
    )
    assert res.summary()["finished"] == 60


def test_a_schedule_ending_without_a_role_is_refused_naming_the_instance() -> None:
    with pytest.raises(ConfigError, match="after the last switch \\(d0 to prefill"):
        SimConfig(instances=_pd(), switches=(RoleSwitch(2.0, 1, "prefill"),))


@pytest.mark.parametrize(
    "kw",
    [
        {"ttft_overhead_s": "0.1"},
        {"ttft_decode_steps": None},
        {"handoff_s": float("inf")},
        {"kv_bytes_per_token": "1"},
        {"kv_layers": "3"},
        {"kv_windows": ((1,),)},
        {"kv_windows": 5},
        {"kv_windows": ((float("nan"), 1.0),)},
        {"kv_windows": ((float("inf"), 1.0),)},
        {"seed": -1},
        {"sample_interval_s": 1e-9},
        {"switches": "later"},
        {"switches": ((1.0, 0, "decode"),)},
    ],
)
def test_bad_config_values_are_named_errors(kw: dict) -> None:
    with pytest.raises(ConfigError):
        SimConfig(**{"instances": _pd(), **kw})


def test_numpy_seeds_and_lists_are_taken() -> None:
    import numpy as np

    cfg = SimConfig(instances=_pd(), seed=np.int64(3), switches=[RoleSwitch(1.0, 1, "decode")])
    assert cfg.seed == 3 and type(cfg.seed) is int and isinstance(cfg.switches, tuple)


@pytest.mark.parametrize(
    "args", [(float("nan"), 1, "decode"), ("5", 1, "decode"), (1.0, 1.5, "decode"), (1.0, 1, "x")]
)
def test_bad_role_switches_are_refused_when_built(args: tuple) -> None:
    with pytest.raises(ConfigError):
        RoleSwitch(*args)


def test_a_non_finite_trace_arrival_is_refused() -> None:
    import numpy as np

    from pdplan.workload.core import Workload

    with pytest.raises(InputError, match=r"arrival_s\[1\] = inf"):  # refused by the Workload
        Workload(np.full(3, 100, np.int32), np.full(3, 5, np.int32), np.array([0.0, np.inf, 1.0]))
    arrivals = Arrivals("trace")  # and by the simulator, for a Workload built past its checks
    wl = Workload(np.full(3, 100, np.int32), np.full(3, 5, np.int32), np.array([0.0, 2.0, 1.0]))
    with pytest.raises(ConfigError, match="request 2"):
        simulate(SimConfig(instances=(InstanceSpec("agg", STEP),)), wl, arrivals)


class _Returns:
    interval_s = 0.5

    def __init__(self, value: object) -> None:
        self.value = value

    def decide(self, now_s: float, view: list) -> object:
        if isinstance(self.value, Exception):
            raise self.value
        return self.value


@pytest.mark.parametrize("value", [3, [(1.0, 0, "decode")], [{"instance": 0}]])
def test_a_policy_returning_something_else_is_a_named_error(value: object) -> None:
    cfg = SimConfig(instances=_pd(), policy=_Returns(value))
    with pytest.raises(ConfigError, match="must return a list of RoleSwitch"):
        simulate(cfg, lengths_workload(20), Arrivals("poisson", rate=5.0))


def test_a_policy_that_raises_is_named_and_keeps_its_cause() -> None:
    from pdplan.sim import SimulationError

    cfg = SimConfig(instances=_pd(), policy=_Returns(ZeroDivisionError("x")))
    with pytest.raises(SimulationError, match="decide\\(\\) raised ZeroDivisionError") as info:
        simulate(cfg, lengths_workload(20), Arrivals("poisson", rate=5.0))
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_a_policy_that_strands_the_cluster_ends_the_run_instead_of_hanging() -> None:
    # at 1 s the only decode instance becomes prefill and nothing brings one back
    cfg = SimConfig(
        instances=_pd(), policy=_Policy(0.5, [RoleSwitch(0.0, 1, "prefill")]), switch_cost_s=0.1
    )
    res = simulate(cfg, lengths_workload(40), Arrivals("poisson", rate=5.0))
    s = res.summary()
    assert s["unfinished"] > 0 and s["finished"] + s["unfinished"] + s["dropped"] == 40
