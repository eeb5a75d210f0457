"""Collective communication times (ring / all-to-all / p2p) on scale-up or scale-out links."""

from __future__ import annotations

__all__ = ["all_gather_s", "all_reduce_s", "all_to_all_s", "p2p_s", "reduce_scatter_s"]


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
