"""A switch policy as a library user writes one: what it sees at each tick matches the
timeline and does not depend on the simulation mode, and an interval it changes mid-run is
checked (a named error, not a hang or a failure deep in the event loop)."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.sim import Arrivals, RoleSwitch, SimConfig, SimResult, simulate
from pdplan.sim.state import DONE

from .helpers import lengths_workload, xpyd


class _Recorder:
    """Records every view; sends decode1 to prefill at the 5th tick, prefill0 to decode at
    the 20th and decode1 back at the 40th."""

    interval_s = 0.25

    def __init__(self) -> None:
        self.calls: list[tuple[float, list[dict[str, Any]]]] = []

    def decide(self, now_s: float, view: list[dict[str, Any]]) -> list[RoleSwitch]:
        self.calls.append((now_s, [dict(v) for v in view]))
        plan = {5: (2, "prefill"), 20: (0, "decode"), 40: (2, "decode")}
        i_role = plan.get(len(self.calls))
        return [RoleSwitch(now_s, *i_role)] if i_role else []


def _recorded(exact: bool) -> tuple[_Recorder, SimResult]:
    pol = _Recorder()
    cfg = SimConfig(
        instances=xpyd(2, 2), policy=pol, switch_cost_s=0.7, exact=exact, sample_interval_s=0.25
    )
    return pol, simulate(cfg, lengths_workload(300, seed=2), Arrivals("poisson", rate=15))


def test_the_policy_view_counts_as_the_timeline_does() -> None:
    """A prompt being prefilled is running on a prefill instance, not waiting (the view had
    waiting 1, running 0 where the timeline at the same instant has queued 0, running 1)."""
    pol, res = _recorded(exact=False)
    tl = res.timeline_table()
    compared = prefilling = 0
    for t, view in pol.calls:
        at = np.isclose(tl["t_s"], t, rtol=0, atol=1e-9)
        for k, v in enumerate(view):
            row = np.flatnonzero(at & (tl["instance"] == k))
            assert len(row) == 1
            got = (v["waiting"], v["running"])
            assert got == (tl["queued"][row[0]], tl["running"][row[0]]), (t, k, v)
            compared += 1
            prefilling += v["role"] == "prefill" and v["running"] > 0
    assert compared > 300 and prefilling > 5  # the case that was wrong came up


def test_the_policy_sees_the_same_cluster_in_exact_and_event_skipping_mode() -> None:
    """A request whose KV arrived mid-run is in the batch at once in event-skipping mode,
    at the next boundary in exact mode: running counted it in one mode only."""
    fast, slow = _recorded(False)[0].calls, _recorded(True)[0].calls
    assert [t for t, _ in fast] == [t for t, _ in slow]
    kv = "kv_used_tokens"  # at a tick on a step's end, one mode may count that step's tokens
    assert [[{k: x for k, x in d.items() if k != kv} for d in v] for _, v in fast] == [
        [{k: x for k, x in d.items() if k != kv} for d in v] for _, v in slow
    ]
    for (_, a), (_, b) in zip(fast, slow, strict=True):
        for x, y in zip(a, b, strict=True):  # at most a step of the batch apart
            assert abs(x[kv] - y[kv]) <= max(1, x["running"]), (x, y)


def test_the_policy_sees_pending_roles_and_kv_as_the_timeline_does() -> None:
    pol, res = _recorded(exact=False)
    tl = res.timeline_table()
    _, view5 = pol.calls[5]  # the tick after decode1 was sent to prefill
    assert view5[2]["next_role"] == "prefill" and view5[2]["role"] == "decode"
    assert all(v["next_role"] == "" for k, v in enumerate(view5) if k != 2)
    for t, view in pol.calls:
        at = np.isclose(tl["t_s"], t, rtol=0, atol=1e-9)
        for k, v in enumerate(view):
            row = np.flatnonzero(at & (tl["instance"] == k))[0]
            assert v["kv_used_tokens"] == tl["kv_tokens"][row], (t, k)
            assert 0 <= v["kv_used_tokens"] <= v["kv_capacity_tokens"]


class _Retimes:
    """Sets its own interval_s to `new` at its third tick; gives up after 2000 ticks (an
    interval of 0 ticked forever at one instant)."""

    interval_s = 0.5

    def __init__(self, new: object) -> None:
        self.new, self.n = new, 0

    def decide(self, now_s: float, view: list[dict[str, Any]]) -> list[RoleSwitch]:
        self.n += 1
        if self.n == 3:
            self.interval_s = self.new  # type: ignore[assignment]
        if self.n > 2000:
            raise RuntimeError(f"ticked {self.n} times, at {now_s} s")
        return []


@pytest.mark.parametrize("new", [0.0, -1.0, math.nan, "1", 1e-9])
def test_an_interval_the_policy_changes_mid_run_is_checked(new: object) -> None:
    cfg = SimConfig(instances=xpyd(1, 1), policy=_Retimes(new))
    with pytest.raises(ConfigError, match=r"interval_s=.* \(changed by the policy at 1\.5 s\)"):
        simulate(cfg, lengths_workload(50), Arrivals("poisson", rate=5.0))


def test_a_longer_interval_the_policy_sets_is_taken() -> None:
    pol = _Retimes(2.0)
    simulate(
        SimConfig(instances=xpyd(1, 1), policy=pol), lengths_workload(80), Arrivals("poisson", 5)
    )
    assert 3 < pol.n < 20  # 0.5, 1.0, 1.5, then every 2 s over a ~16 s run


class _Random:
    """Random wishes (its current role too) for random instances every 0.3 s."""

    interval_s = 0.3

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def decide(self, now_s: float, view: list[dict[str, Any]]) -> list[RoleSwitch]:
        roles = ("prefill", "decode")
        return [
            RoleSwitch(now_s, k, self.rng.choice(roles))
            for k in range(len(view))
            if self.rng.random() < 0.2
        ]


@pytest.mark.parametrize("transfer", ["after", "layerwise"])
def test_random_switching_loses_nothing_and_works_only_online(transfer: str) -> None:
    """Every request finishes once; no step runs on an instance while it is offline; each
    switch costs switch_cost_s once; exact mode agrees; the same seed repeats the run."""
    cost = 0.4

    def run(exact: bool) -> SimResult:
        cfg = SimConfig(
            instances=xpyd(2, 2, d_cap=8000), policy=_Random(3), switch_cost_s=cost,
            transfer_mode=transfer, exact=exact, trace=True, sample_interval_s=0.05,
        )  # fmt: skip
        return simulate(cfg, lengths_workload(200, seed=3), Arrivals("poisson", rate=12))

    res, again, ex = run(False), run(False), run(True)
    assert (res.columns["state"] == DONE).sum() == 200 and res.dropped == 0
    assert len(res.switches) > 5 and res.switches == again.switches
    assert [w[1:] for w in ex.switches] == [w[1:] for w in res.switches]
    assert [w[0] for w in ex.switches] == pytest.approx([w[0] for w in res.switches])
    assert all(
        np.array_equal(res.columns[k], again.columns[k], equal_nan=True) for k in res.columns
    )
    for t_end, idx, _ in res.switches:
        for who, _, t, d, _, _ in res.trace_events or []:
            assert who != idx or t + d <= t_end - cost + 1e-9 or t >= t_end - 1e-9
    tl = res.timeline_table()
    for k in range(4):  # samples while offline: its switches' cost, on the 0.05 s grid
        offline = np.count_nonzero((tl["instance"] == k) & (tl["state"] == "switching"))
        n_sw = sum(1 for _, i, _ in res.switches if i == k)
        assert abs(offline * 0.05 - n_sw * cost) <= n_sw * 0.05 + 1e-9
    for m in ("ttft_s", "tpot_s"):
        for q in ("p50", "p99"):
            a, b = res.summary()[m][q], ex.summary()[m][q]
            assert a == pytest.approx(b, rel=0.01)
