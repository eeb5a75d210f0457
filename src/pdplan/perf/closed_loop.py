"""Queueing formulas of a closed loop of C clients for the steady-state estimate (estimate.py)."""

from __future__ import annotations

__all__ = ["MAX_UTIL", "prefill_queue_ttft", "slot_wait"]

MAX_UTIL = 0.97  # cap on the prefill share of time; beyond it the queue grows without bound


def slot_wait(clients: int, slots: int, service_s: float) -> float:
    """Extra TTFT when more clients than batch slots: clients beyond the slots wait for a
    finishing request; by Little's law the wait is (clients - slots) * service / slots."""
    if clients <= slots:
        return 0.0
    return (clients - slots) * service_s / slots


def prefill_queue_ttft(
    p1: float,
    p_batch: float,
    fixed: float,
    concurrency: int,
    n_prefill: int,
    osl: int,
    t_dec: float,
    slot_wait: float,
) -> tuple[float, float]:
    """Steady-state TTFT (s) and prefill utilisation of a disaggregated closed loop: the
    clients' cycle sets the arrival rate X = C / E2E, the prefill pool is M/D/1-like at
    u = X * p_batch / n_prefill (Pollaczek-Khinchine mean wait u * p / 2(1 - u)), and TTFT =
    wait + p1 + `fixed`; solved by damped fixed-point iteration (40 half steps).

    No more clients than prefill instances: no wait. P-K assumes arrivals that can land on a
    busy server, but a closed-loop request has at most C - 1 others in flight, so with
    C <= n_prefill it always finds an idle instance (least-loaded routing, the simulator's
    least_tokens; C = 1 under any routing), as the simulator's closed loop of one client
    shows (queue_s 0); the utilisation is still X * p_batch / n_prefill."""
    queues = concurrency > max(1, n_prefill)  # False: each request finds an idle instance
    ttft, util = p1 + fixed, 0.0
    for _ in range(40):
        e2e = ttft + (osl - 1) * t_dec + slot_wait
        x = concurrency / e2e
        util = min(MAX_UTIL, x * p_batch / max(1, n_prefill))
        wait = util * p1 / (2.0 * (1.0 - util)) if queues else 0.0  # s, P-K mean wait
        ttft = 0.5 * ttft + 0.5 * (wait + p1 + fixed)
    return ttft, util
