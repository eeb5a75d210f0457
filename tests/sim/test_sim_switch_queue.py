"""A role switch asked for while another is under way waits for it; asking again for the
role an instance is already switching to does nothing (no phantom switches, full cost)."""

from __future__ import annotations

from pdplan.sim import Arrivals, RoleSwitch, SimConfig, simulate

from .helpers import lengths_workload, xpyd


class _Insistent:
    """Asks instance 2 to become prefill at every tick until it serves as one, then once to
    go back to decode (the pattern of a threshold policy that re-asks until it sees a change)."""

    interval_s = 0.5

    def __init__(self) -> None:
        self.back = False

    def decide(self, now_s: float, view: list[dict]) -> list[RoleSwitch]:
        inst = view[2]
        if inst["role"] == "decode" and not self.back:
            return [RoleSwitch(now_s, 2, "prefill")]
        if inst["role"] == "prefill" and not inst["draining"] and not self.back:
            self.back = True
            return [RoleSwitch(now_s, 2, "decode")]
        return []


def test_asking_again_mid_switch_adds_no_switch_and_the_cost_is_paid() -> None:
    cfg = SimConfig(instances=xpyd(2, 2), policy=_Insistent(), switch_cost_s=3.0)
    res = simulate(cfg, lengths_workload(300, seed=4), Arrivals("poisson", rate=6.0))
    log = [(round(t, 3), i, role) for t, i, role in res.switches]
    assert [(i, role) for _, i, role in log] == [(2, "prefill"), (2, "decode")]
    assert log[1][0] - log[0][0] >= 3.0  # the switch back drains and is offline 3 s
    s = res.summary()
    assert s["finished"] + s["dropped"] == 300


def test_a_scheduled_switch_during_a_drain_runs_after_it() -> None:
    # decode0 (instance 2) starts draining at 1 s; the switch back at 1.2 s comes while it
    # still drains its running decodes: it waits, then runs (it was dropped silently)
    sw = (RoleSwitch(1.0, 2, "prefill"), RoleSwitch(1.2, 2, "decode"))
    cfg = SimConfig(instances=xpyd(2, 2), switches=sw, switch_cost_s=0.5)
    res = simulate(cfg, lengths_workload(300, seed=4), Arrivals("poisson", rate=6.0))
    assert [(i, role) for _, i, role in res.switches] == [(2, "prefill"), (2, "decode")]
    t_pf, t_dec = (t for t, _, _ in res.switches)
    assert t_pf > 1.2 and t_dec >= t_pf + 0.5
