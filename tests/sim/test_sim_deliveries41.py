"""KV deliveries landing at one instant on an idle decode instance join one first step."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

# prefill: 0.01 s + 1 ms per prompt token; decode: 0.02 s a step whatever the batch
PF = LinearStepModel(base_s=0.01, per_token_s=0.001)
DEC = LinearStepModel(base_s=0.02)


def _run(handoff_s: float, exact: bool, inp: tuple[int, int] = (100, 100)) -> dict[str, list]:
    """Two prompts at 0 s, one to each prefill instance (nodes 0 and 2, round robin), their
    KV to one idle decode instance (node 1) over 1e6 B/s NICs, 1000 B/token, 1 ms latency."""
    insts = (
        InstanceSpec("prefill", PF, node=0, nic_bytes_per_s=1e6),
        InstanceSpec("prefill", PF, node=2, nic_bytes_per_s=1e6),
        InstanceSpec("decode", DEC, node=1, nic_bytes_per_s=1e6),
    )
    cfg = SimConfig(
        instances=insts,
        kv_bytes_per_token=1000,
        kv_layers=10,
        link_latency_s=1e-3,
        handoff_s=handoff_s,
        exact=exact,
    )
    wl = Workload(np.array(inp, np.int32), np.array([4, 4], np.int32), np.zeros(2))
    res = simulate(cfg, wl)
    t = res.request_table()
    return {k: [float(x) for x in t[k]] for k in ("first", "finish", "ttft")}


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("handoff_s", [0.0, 0.03])
def test_equal_transfers_ending_together_start_one_step(handoff_s: float, exact: bool) -> None:
    """Both prefills 0.01 + 0.1 = 0.11 s. The two 1e5 B transfers share the decode NIC at
    5e5 B/s each: 0.2 s, last bytes at 0.31, delivered 0.311 (+ hand-off). The decode
    instance is idle then and its first poll sees both: one step, first tokens together at
    0.331 (+ hand-off), four tokens by 0.391 (+ hand-off). Starting on the first alone put
    the second a step later (0.351)."""
    got = _run(handoff_s, exact)
    assert got["first"] == pytest.approx([0.331 + handoff_s] * 2, abs=1e-12)
    assert got["finish"] == pytest.approx([0.391 + handoff_s] * 2, abs=1e-12)
    assert got["ttft"] == pytest.approx([0.331 + handoff_s] * 2, abs=1e-12)


@pytest.mark.parametrize("exact", [False, True])
def test_a_delivery_a_moment_later_still_waits_for_the_boundary(exact: bool) -> None:
    """Prompts of 100 and 101 tokens: prefills end at 0.11 and 0.111 s. A's 1e5 B: 1e3 B alone
    at 1e6 B/s by 0.111, then 99e3 B at 5e5 B/s: last byte 0.309, delivered 0.310. B's 1.01e5
    B: 99e3 B by 0.309, 500 B more at 5e5 B/s while A's latency still holds its share (to
    0.310), the last 1.5e3 B alone at 1e6 B/s: 0.3115, delivered 0.3125. A starts a step at
    0.310 alone (first token 0.330); B, 2.5 ms later, joins at that boundary: first 0.350."""
    got = _run(0.0, exact, inp=(100, 101))
    assert got["first"] == pytest.approx([0.330, 0.350], abs=1e-12)
    assert got["finish"] == pytest.approx([0.390, 0.410], abs=1e-12)
