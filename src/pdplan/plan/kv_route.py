"""The KV path of a steady-state xPyD estimate: NVLink or NIC, by where the instances sit.

`pdplan simulate` puts a deployment's instances on NVLink nodes pool after pool (placement
"packed", sim.placement.place; a node is the GPU's scale-up domain, plan.sim_deploy._links)
and moves a request's KV over NVLink when its prefill and decode instances share a node, else
over the NICs (sim.network.Network.path). The estimate places them by the same rule, so
1P:tp4 + 1D:tp4 on 8-GPU H100 nodes moves KV over NVLink in both (it priced the NIC: 7.7 ms
against 0.37 ms of Llama-3.1-70B TTFT at 4,000 prompt tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.kv_transfer import kv_transfer
from pdplan.sim.placement import place

__all__ = ["KVRoute", "kv_route"]


@dataclass(frozen=True)
class KVRoute:
    """One prompt's KV move as the estimate prices it."""

    time_s: float  # mean transfer time over the P -> D pairs, s
    path: str  # "nvlink" (every pair on one node), "nic" (none) or "mixed"
    nvlink_share: float  # share of the P -> D pairs on one node (KV over NVLink), 0..1


def kv_route(
    model: ModelSpec,
    gpu: GPUSpec,
    isl: int,
    kv_dtype: str,
    layouts: tuple[Layout, Layout],
    workers: tuple[int, int],
) -> KVRoute:
    """KV transfer of an isl-token prompt from one of workers[0] prefill instances (layout
    layouts[0]) to one of workers[1] decode instances (layouts[1]), placed as `simulate`
    packs them (module doc). The simulator's default P -> D pairing (least_tokens) spreads a
    prefill instance's requests over the decode pool, so the time is the mean over all P x D
    pairs of the NVLink time (same node) or the NIC time (perf.kv_transfer, seed s5)."""
    (pl, dl), (n_p, n_d) = layouts, workers
    per_node = gpu.scaleup_domain  # GPUs an NVLink node joins, as simulate's placement uses
    pool = [(None, pl.gpus, "prefill", per_node)] * n_p
    items = pool + [(None, dl.gpus, "decode", per_node)] * n_d  # pool order, as simulate
    nodes = place(items, "packed")  # simulate's default --placement
    pairs = [(p, d) for p in nodes[:n_p] for d in nodes[n_p:]]
    share = sum(p == d for p, d in pairs) / len(pairs)  # pairs whose KV stays on NVLink
    kw: dict[str, Any] = {
        "kv_dtype": kv_dtype,
        "gpu": gpu,
        "prefill_layout": pl,
        "decode_layout": dl,
    }
    t_nvl = kv_transfer(model, isl, path="nvlink", **kw).time_s if share > 0 else 0.0  # s
    t_nic = kv_transfer(model, isl, path="nic", **kw).time_s if share < 1 else 0.0  # s
    path = "nvlink" if share == 1 else "nic" if share == 0 else "mixed"
    return KVRoute(share * t_nvl + (1.0 - share) * t_nic, path, share)
