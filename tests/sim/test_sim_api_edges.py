"""The simulator's public API at its edges: wrong inputs refused by name, metrics consistent."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import (
    Arrivals,
    InstanceSpec,
    RoleSwitch,
    SimConfig,
    percentiles,
    simulate,
    simulate_closed_loop,
)
from pdplan.sim.deploy import parse_deployment
from pdplan.workload import Workload, synthesize

SM = LinearStepModel(base_s=0.01, per_token_s=1e-5, per_ctx_s=1e-8)


def _agg(**kw: Any) -> InstanceSpec:
    return InstanceSpec("agg", SM, **kw)


def _wl(times: list[float], inp: int = 100, out: int = 10) -> Workload:
    n = len(times)
    return Workload(np.full(n, inp, np.int32), np.full(n, out, np.int32), np.array(times))


def test_closed_loop_throughput_counts_measured_requests_only() -> None:
    # 32 clients: throughput x mean E2E = 32 (Little); counting the warm-up round gave 64
    s = simulate_closed_loop((_agg(),), 500, 100, 32, n_requests=64)
    assert s["throughput_rps"] * s["e2e_s"]["mean"] == pytest.approx(32, rel=0.05)


def test_trace_times_out_of_order_are_refused_by_row() -> None:
    with pytest.raises(ConfigError, match="go back at request 1"):
        simulate(SimConfig((_agg(),)), _wl([10.0, 0.0]))


@pytest.mark.parametrize("warmup", [-5, 2.5, 3, True])
def test_a_warmup_outside_the_workload_is_refused(warmup: Any) -> None:
    with pytest.raises(ConfigError, match="warmup"):
        simulate(SimConfig((_agg(),)), _wl([0.0, 0.1, 0.2]), warmup=warmup)


@pytest.mark.parametrize("until", [float("nan"), -5.0, "10"])
def test_a_bad_until_is_refused(until: Any) -> None:
    with pytest.raises(ConfigError, match="until"):
        simulate(SimConfig((_agg(),)), _wl([0.0]), until=until)


def test_a_generous_until_does_not_dilute_utilisation() -> None:
    w = synthesize(n=200, rate=20, input="fixed:300", output="fixed:50")
    run = [simulate(SimConfig((_agg(),)), w, until=u).summary() for u in (math.inf, 1000.0)]
    assert run[0]["instances"][0]["utilisation"] == run[1]["instances"][0]["utilisation"]
    assert run[0]["little"] == run[1]["little"]


def test_a_long_idle_gap_costs_a_few_samples_not_millions() -> None:
    r = simulate(SimConfig((_agg(),)), _wl([0.0, 1e7]))  # a 116-day gap: 10M 1 s ticks before
    assert r.summary()["finished"] == 2 and len(r.timeline_table()["t_s"]) < 20


class _Restates:
    interval_s = 0.5

    def decide(self, now: float, view: Any) -> list[RoleSwitch]:
        return [RoleSwitch(now, 1, "prefill")]  # turns the only decode instance into prefill


def test_a_policy_restating_its_roles_cannot_keep_a_stuck_run_alive() -> None:
    cfg = SimConfig((InstanceSpec("prefill", SM), InstanceSpec("decode", SM)), policy=_Restates())
    s = simulate(cfg, synthesize(n=10, rate=20)).summary()
    assert s["finished"] + s["unfinished"] + s["dropped"] == 10 and s["unfinished"] > 0


@pytest.mark.parametrize("kw", [{"base_s": -0.01}, {"base_s": math.inf}, {"per_ctx_s": math.nan}])
def test_step_models_with_impossible_times_are_refused(kw: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="finite number >= 0"):
        LinearStepModel(**kw)


def test_a_step_model_without_decode_affine_is_refused() -> None:
    class OnlyStep:
        def step_time(self, shape: object) -> float:
            return 0.01

    with pytest.raises(ConfigError, match="decode_affine"):
        InstanceSpec("agg", OnlyStep())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kw",
    [
        {"mode": "trace", "rate": 1000.0},
        {"mode": "poisson", "rate": 5.0, "think_s": 3.0},
        {"mode": "poisson", "rate": 5.0, "concurrency": 3},
        {"mode": "closed", "concurrency": 2, "duration_s": 0.5},
        {"mode": "poisson", "rate": 1e300},
        {"mode": "closed", "concurrency": 1, "think_s": 1e300},
    ],
)
def test_arrival_fields_a_mode_would_ignore_or_cannot_run_are_refused(kw: dict) -> None:
    with pytest.raises(ConfigError):
        Arrivals(**kw)


def test_numpy_integers_are_numbers() -> None:
    a = Arrivals("closed", concurrency=np.int64(4))  # type: ignore[arg-type]
    assert simulate(SimConfig((_agg(),)), _wl([0.0] * 8), a).summary()["finished"] == 8


@pytest.mark.parametrize(
    "cfg_kw",
    [
        {"exact": "no"},
        {"trace": "false"},
        {"ttft_slo_s": True},
    ],
)
def test_config_values_taken_by_truthiness_or_twice_are_refused(cfg_kw: dict) -> None:
    with pytest.raises(ConfigError):
        SimConfig(**{"instances": (_agg(),), **cfg_kw})


def test_a_repeated_instance_name_is_told_apart_in_the_results() -> None:
    res = simulate(SimConfig((_agg(name="x"), _agg(name="x"), _agg(name="y"))), _wl([0.0, 0.1]))
    assert [i["name"] for i in res.summary()["instances"]] == ["x#1", "x#2", "y"]
    assert set(res.request_table(labels=True)["p_inst"]) <= {"x#1", "x#2", "y"}


@pytest.mark.parametrize(
    ("args", "kw", "part"),
    [
        (("500", 100, 4), {}, "isl"),
        ((math.nan, 100, 4), {}, "isl"),
        ((10**12, 100, 4), {}, "isl"),
        ((500, 100, 4), {"n_requests": 0}, "n_requests"),
        ((500, 100, 4), {"n_requests": 50.5}, "n_requests"),
        ((500, 100, 4), {"range_ratio": 0.5, "seed": "x"}, "seed"),
        ((500, 100, 4), {"routin": "p2c"}, "routin"),
    ],
)
def test_closed_loop_arguments_are_refused_by_name(args: tuple, kw: dict, part: str) -> None:
    with pytest.raises(ConfigError, match=part):
        simulate_closed_loop((_agg(),), *args, **kw)


@pytest.mark.parametrize(
    "call",
    [
        lambda w: simulate((_agg(),), w),  # type: ignore[arg-type]
        lambda w: simulate(SimConfig((_agg(),)), [1, 2, 3]),  # type: ignore[arg-type]
        lambda w: simulate(SimConfig((_agg(),)), w, "poisson"),  # type: ignore[arg-type]
    ],
)
def test_simulate_names_a_wrong_argument_type(call: Any) -> None:
    with pytest.raises(ConfigError, match="must be a"):
        call(_wl([0.0]))


def test_small_helpers_take_plain_input_and_name_mistakes() -> None:
    assert percentiles([1.0, 2.0, 3.0])["p50"] == 2.0  # type: ignore[arg-type]
    res = simulate(SimConfig((_agg(),)), _wl([0.0]))
    with pytest.raises(ConfigError, match="unknown metric 'foo'"):
        res.metric("foo")
    with pytest.raises(ConfigError, match="deployment must be a string"):
        parse_deployment(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="kv_windows"):
        SimConfig((_agg(),), kv_windows=((1.7, 100.0),))
