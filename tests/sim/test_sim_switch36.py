"""A switch policy sees the requests that are in no queue: prompts prefilled while the
cluster has no decode instance (parked, holding their KV on their prefill instance) and
prompts that arrived while it has no prefill instance (unrouted)."""

from __future__ import annotations

from typing import Any

from pdplan.sim import Arrivals, RoleSwitch, SimConfig, simulate

from .helpers import lengths_workload, xpyd


class _Leaves:
    """Sends instance `k` to `role` at the 2nd tick and back to `back` at the 12th."""

    interval_s = 0.5

    def __init__(self, k: int, role: str, back: str) -> None:
        self.k, self.role, self.back = k, role, back
        self.views: list[list[dict[str, Any]]] = []

    def decide(self, now_s: float, view: list[dict[str, Any]]) -> list[RoleSwitch]:
        self.views.append([dict(v) for v in view])
        n = len(self.views)
        role = self.role if n == 2 else self.back if n == 12 else None
        return [RoleSwitch(now_s, self.k, role)] if role else []


def _run(pol: _Leaves) -> None:
    cfg = SimConfig(instances=xpyd(1, 1), policy=pol, switch_cost_s=0.2)
    res = simulate(cfg, lengths_workload(200, seed=4), Arrivals("poisson", rate=10.0))
    assert res.summary()["finished"] == 200


def test_the_view_counts_parked_requests_on_their_prefill_instance() -> None:
    pol = _Leaves(1, "prefill", "decode")  # the only decode instance leaves for a while
    _run(pol)
    most = max(v[0]["parked"] for v in pol.views)
    assert most > 3  # prompts prefilled meanwhile wait, holding KV on instance 0
    # instance 1 prefills too while it is a prefill instance; parked KV is only ever held
    # on a prefill instance
    assert all(d["role"] == "prefill" for v in pol.views for d in v if d["parked"])
    assert pol.views[-1][0]["parked"] == 0  # paired once the decode instance came back
    assert all(v[0]["unrouted"] == 0 for v in pol.views)


def test_the_view_counts_unrouted_prompts_in_every_instance() -> None:
    pol = _Leaves(0, "decode", "prefill")  # the only prefill instance leaves for a while
    _run(pol)
    most = max(v[0]["unrouted"] for v in pol.views)
    assert most > 3
    assert all(v[0]["unrouted"] == v[1]["unrouted"] for v in pol.views)  # cluster-wide
    assert pol.views[-1][0]["unrouted"] == 0
