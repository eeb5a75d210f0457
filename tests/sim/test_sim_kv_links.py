"""KV transfer links: one request's KV leaves only from the GPUs that hold a distinct shard
of it (InstanceSpec.kv_senders), over NVLink inside a node and the NICs across; the layer-wise
last layer takes the same path and cap."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

PREFILL = LinearStepModel(base_s=0.01, per_token_s=1e-4)  # 1000 tokens: 0.11 s
DECODE = LinearStepModel(base_s=0.01, per_seq_s=5e-5)
NIC, NVL = 50e9, 450e9  # B/s per GPU


def _spec(role: str, node: int, senders: int, gpus: int = 8) -> InstanceSpec:
    step = PREFILL if role == "prefill" else DECODE
    return InstanceSpec(
        role, step, node=node, gpus=gpus, kv_senders=senders, nic_bytes_per_s=NIC,
        nvlink_bytes_per_s=NVL,
    )  # fmt: skip


def _wl(n: int, isl: int = 1000) -> Workload:
    return Workload(np.full(n, isl, np.int32), np.full(n, 2, np.int32), np.zeros(n))


def _cfg(*inst: InstanceSpec, **kw: object) -> SimConfig:
    kw = {"kv_bytes_per_token": 1e6, "link_latency_s": 1e-5, **kw}
    return SimConfig(instances=inst, **kw)  # type: ignore[arg-type]


def test_a_lone_transfer_moves_at_its_senders_rate() -> None:
    """1e9 B from one sending GPU (an MLA latent) over one 50 GB/s NIC: 0.02 s, not the
    2.5 ms that all 8 GPUs' NICs would take; with all 8 as senders it is 2.5 ms."""
    one = simulate(_cfg(_spec("prefill", 0, 1), _spec("decode", 1, 1)), _wl(1))
    assert one.metric("xfer")[0] == pytest.approx(1e9 / NIC + 1e-5)
    eight = simulate(_cfg(_spec("prefill", 0, 0), _spec("decode", 1, 8)), _wl(1))
    assert eight.metric("xfer")[0] == pytest.approx(1e9 / (8 * NIC) + 1e-5)
    few = simulate(_cfg(_spec("prefill", 0, 8), _spec("decode", 1, 2)), _wl(1))
    assert few.metric("xfer")[0] == pytest.approx(1e9 / (2 * NIC) + 1e-5)  # fewer receivers


def test_different_requests_use_different_ranks_up_to_the_link() -> None:
    """Two prompts of one prefill batch to two decode instances: each has its own sending
    GPU, so both move at one NIC's rate; nine share the 8-NIC link (400/9 GB/s each). The
    first arrival is prefilled alone (its transfer is over before the others'): skip it."""
    three = _cfg(_spec("prefill", 0, 1), *(_spec("decode", 1 + i, 1) for i in range(3)))
    res = simulate(three, _wl(3))
    assert np.allclose(res.metric("xfer"), 1e9 / NIC + 1e-5)
    ten = _cfg(_spec("prefill", 0, 1), *(_spec("decode", 1 + i, 1) for i in range(10)))
    res = simulate(ten, _wl(10))
    assert res.metric("xfer")[0] == pytest.approx(1e9 / NIC + 1e-5)
    assert np.allclose(res.metric("xfer")[1:], 1e9 / (8 * NIC / 9) + 1e-5)


def test_the_cap_inside_a_node_is_nvlink() -> None:
    res = simulate(_cfg(_spec("prefill", 0, 1, 4), _spec("decode", 0, 1, 4)), _wl(1))
    assert res.metric("xfer")[0] == pytest.approx(1e9 / NVL + 1e-5)


@pytest.mark.parametrize(("node", "senders", "bw"), [(0, 8, 8 * NVL), (1, 8, 8 * NIC), (1, 1, NIC)])
def test_layerwise_last_layer_takes_the_transfers_path(node: int, senders: int, bw: float) -> None:
    """Layer-wise: the body overlaps the 1.01 s prefill of 10,000 tokens; only the last of
    80 layers trails it, over the path the transfer uses (NVLink when P and D share a node,
    not the NIC) at its senders' rate and with that path's latency: 1e10 / 80 B / bw + 3 us
    (NVLink) or 10 us (NIC)."""
    cfg = _cfg(
        _spec("prefill", 0, senders),
        _spec("decode", node, senders),
        transfer_mode="layerwise",
        kv_layers=80,
        nvlink_latency_s=3e-6,
    )
    res = simulate(cfg, _wl(1, 10_000))
    assert res.metric("xfer")[0] == pytest.approx(1e10 / 80 / bw + (3e-6 if node == 0 else 1e-5))


def test_each_path_pays_its_own_latency() -> None:
    """Two transfers at once from one prefill instance: to a decode on its node (NVLink, 1 ms
    latency here) and to one on another node (NIC, 5 ms); each ends after its own."""
    cfg = _cfg(
        _spec("prefill", 0, 8),
        _spec("decode", 0, 8),
        _spec("decode", 1, 8),
        link_latency_s=5e-3,
        nvlink_latency_s=1e-3,
        pairing="round_robin",
    )
    res = simulate(cfg, _wl(2))  # one prefill step of both prompts, then one transfer each
    xfer = sorted(res.metric("xfer"))
    assert xfer[0] == pytest.approx(1e9 / (8 * NVL) + 1e-3)
    assert xfer[1] == pytest.approx(1e9 / (8 * NIC) + 5e-3)


def test_kv_senders_is_validated() -> None:
    assert _spec("prefill", 0, 0).senders == 8 and _spec("prefill", 0, 3).senders == 3
    for bad in (-1, 9):
        with pytest.raises(ConfigError, match="kv_senders"):
            _spec("prefill", 0, bad)
