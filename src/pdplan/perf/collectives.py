"""Collective communication times (ring / all-to-all / p2p) on scale-up or scale-out links."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.perf.efficiency import Efficiency

__all__ = [
    "Links",
    "all_gather_s",
    "all_reduce_s",
    "all_to_all_s",
    "p2p_s",
    "reduce_scatter_s",
]


def all_reduce_s(nbytes: float, n: int, bw_Bps: float, alpha_s: float, eta: float = 1.0) -> float:
    """Ring all-reduce of an `nbytes` message over n ranks, seconds.

    # ring all-reduce: alpha + 2(n-1)/n * bytes / (bw * eta)   (Thakur et al. 2005; NCCL docs
    # "busbw": algbw * 2(n-1)/n). bw_Bps: per-GPU unidirectional link bandwidth, bytes/s.
    """
    if n <= 1 or nbytes <= 0:
        return 0.0
    return alpha_s + 2.0 * (n - 1) / n * nbytes / (bw_Bps * eta)


def all_gather_s(nbytes: float, n: int, bw_Bps: float, alpha_s: float, eta: float = 1.0) -> float:
    """Ring all-gather producing an `nbytes` result on every rank, seconds.

    # ring all-gather / reduce-scatter: alpha + (n-1)/n * bytes / (bw * eta)   (NCCL busbw)
    """
    if n <= 1 or nbytes <= 0:
        return 0.0
    return alpha_s + (n - 1) / n * nbytes / (bw_Bps * eta)


def reduce_scatter_s(
    nbytes: float, n: int, bw_Bps: float, alpha_s: float, eta: float = 1.0
) -> float:
    """Ring reduce-scatter of an `nbytes` input per rank, seconds (same cost as all-gather)."""
    return all_gather_s(nbytes, n, bw_Bps, alpha_s, eta)


def all_to_all_s(
    send_bytes: float, n: int, bw_Bps: float, alpha_s: float, eta: float = 1.0
) -> float:
    """All-to-all where each rank sends `send_bytes` in total to the n-1 others, seconds.

    # all-to-all: alpha + bytes_sent_per_rank / (bw * eta); each rank's link carries its own
    # outgoing share (full-bisection NVSwitch / fat-tree assumption).
    """
    if n <= 1 or send_bytes <= 0:
        return 0.0
    return alpha_s + send_bytes / (bw_Bps * eta)


def p2p_s(nbytes: float, bw_Bps: float, alpha_s: float, eta: float = 1.0) -> float:
    """Point-to-point send of `nbytes`, seconds: alpha + bytes / (bw * eta)."""
    if nbytes <= 0:
        return 0.0
    return alpha_s + nbytes / (bw_Bps * eta)


@dataclass(frozen=True)
class Links:
    """Collective timing inside the scale-up domain (NVLink), across domains inside one server
    (PCIe, for cards an NVLink bridge pairs: H100 NVL, A100 PCIe) and across servers (NIC)."""

    up_bw: float  # bytes/s per GPU, unidirectional
    up_alpha: float
    up_eta: float
    nic_bw: float
    nic_alpha: float
    nic_eta: float
    domain: int
    node: int = 0  # GPUs per server; beyond the domain but inside it traffic crosses PCIe
    node_bw: float = 0.0  # PCIe bytes/s per GPU, unidirectional

    @classmethod
    def for_gpu(cls, gpu: GPUSpec, eff: Efficiency, domain: int) -> Links:
        up = gpu.scaleup_bytes_per_s if domain > 1 else gpu.pcie_gbps * 1e9
        return cls(
            up,
            eff.coll_alpha_s,
            eff.coll_eta,
            gpu.nic_bytes_per_s,
            eff.nic_alpha_s,
            eff.nic_eta,
            domain,
            gpu.gpus_per_node,
            gpu.pcie_gbps * 1e9,  # PCIe GB/s per direction (catalog)
        )

    def _in_server(self, n: int) -> bool:
        """n GPUs past the NVLink domain but inside one server (bridged PCIe cards)."""
        return self.domain < n <= self.node and self.node_bw > 0

    def all_reduce(self, nbytes: float, n: int) -> float:
        """Within the domain: ring on NVLink. Across it: hierarchical (NCCL tree/ring per level):
        reduce-scatter + all-gather inside each domain of d GPUs on NVLink, and an all-reduce of
        each GPU's 1/d slice across the k = n/d domains, every GPU on its own NIC."""
        if n <= self.domain:
            return all_reduce_s(nbytes, n, self.up_bw, self.up_alpha, self.up_eta)
        d, k = self.domain, math.ceil(n / self.domain)
        intra = all_reduce_s(nbytes, d, self.up_bw, self.up_alpha, self.up_eta)
        if self._in_server(n):  # the domains of one server reduce over PCIe
            return intra + all_reduce_s(nbytes / d, k, self.node_bw, self.up_alpha, self.up_eta)
        # NCCL takes the faster of ring (2(k-1) hops) and tree (2 log2 k hops up and down the
        # double binary tree) for each size: the tree's latency for the small decode messages
        steps = min(2 * (k - 1), 2 * math.ceil(math.log2(k)))
        inter = all_reduce_s(nbytes / d, k, self.nic_bw, self._ring_alpha(steps), self.nic_eta)
        return intra + inter

    def _ring_alpha(self, steps: int) -> float:
        """Latency of `steps` sequential hops across the scale-out network, s.
        # latency: steps * per-hop latency (NCCL's tuning model: base + nsteps * hwLat; ring:
        # nsteps = 2(k-1) for an all-reduce, k-1 for an all-gather over k ranks; tree: 2 log2 k);
        # a hop is taken as nic_alpha / 2, so a 2-domain all-reduce (2 hops) costs nic_alpha as a
        # single message, and 8 domains 3x that (tree; a ring's 14 hops 7x)"""
        return self.nic_alpha * max(1, steps) / 2.0

    def all_gather(self, nbytes: float, n: int) -> float:
        """All-gather of an nbytes result; across domains the (k-1)/k remote share rides the
        NICs, each GPU carrying 1/d of it (hierarchical): first across the k domains among
        the GPUs of one local rank (each ends with nbytes / d), then inside each domain over
        NVLink to the full nbytes. Every GPU receives (n-1)/n x nbytes in all:
        (k-1)/k x nbytes/d on the NIC + (d-1)/d x nbytes on NVLink (the intra-domain gather
        is of the whole result, as in all_reduce's reduce-scatter + all-gather of nbytes;
        gathering only nbytes / k there delivered (d + k - 2) / (d k) of it, half at d=8, k=2)."""
        if n <= self.domain:
            return all_gather_s(nbytes, n, self.up_bw, self.up_alpha, self.up_eta)
        d, k = self.domain, math.ceil(n / self.domain)
        intra = all_gather_s(nbytes, d, self.up_bw, self.up_alpha, self.up_eta)
        if self._in_server(n):
            return intra + all_gather_s(nbytes / d, k, self.node_bw, self.up_alpha, self.up_eta)
        inter = all_gather_s(nbytes / d, k, self.nic_bw, self._ring_alpha(k - 1), self.nic_eta)
        return intra + inter

    def all_to_all(self, send_bytes: float, n: int) -> float:
        """All-to-all: the share bound for GPUs in other domains, (n-d)/(n-1), leaves over its
        NIC; the rest over NVLink; both proceed at once, the slower one sets the time."""
        if n <= self.domain:
            return all_to_all_s(send_bytes, n, self.up_bw, self.up_alpha, self.up_eta)
        # send_bytes goes to the n-1 other ranks alike, n-d of them in other domains: (n-d)/(n-1)
        # of it leaves over the NIC ((n-d)/n was that share of all n ranks, own rank included)
        remote = send_bytes * (n - self.domain) / (n - 1)
        t_up = all_to_all_s(send_bytes - remote, n, self.up_bw, self.up_alpha, self.up_eta)
        if self._in_server(n):  # the other domains of the server: over PCIe
            return max(t_up, all_to_all_s(remote, n, self.node_bw, self.up_alpha, self.up_eta))
        t_nic = all_to_all_s(remote, n, self.nic_bw, self.nic_alpha, self.nic_eta)
        return max(t_up, t_nic)

    def p2p(self, nbytes: float) -> float:
        return p2p_s(nbytes, self.nic_bw, self.nic_alpha, self.nic_eta)

    def pp_boundaries(self, nbytes: float, pp: int, stage_gpus: int) -> float:
        """The pp - 1 stage-to-stage sends of nbytes each (activations per GPU), s. Stages
        are laid out in order (engines rank pp_rank x stage size + local rank: vLLM, SGLang,
        TensorRT-LLM's mapping), so floor(domain / stage_gpus) consecutive stages share one
        NVLink domain and their boundaries ride it; only the ceil(pp / per_domain) - 1
        boundaries between domains cross the NIC (every boundary did before)."""
        if pp <= 1:
            return 0.0
        per_domain = self.domain // stage_gpus if self.domain > 1 else 0
        if per_domain <= 1:
            return (pp - 1) * self.p2p(nbytes)
        remote = math.ceil(pp / per_domain) - 1
        local = pp - 1 - remote
        t_up = p2p_s(nbytes, self.up_bw, self.up_alpha, self.up_eta)
        return local * t_up + remote * self.p2p(nbytes)
