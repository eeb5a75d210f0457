"""How requests enter a simulation: trace replay, open-loop Poisson, closed loop."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import TypeGuard

import numpy as np

from pdplan.errors import ConfigError
from pdplan.workload.core import Workload
from pdplan.workload.synth import MAX_RATE, MAX_SPAN_S

__all__ = ["Arrivals"]


def _real(v: object) -> TypeGuard[float]:
    return isinstance(v, Real) and not isinstance(v, bool)


def _int(v: object) -> TypeGuard[int]:
    return isinstance(v, Integral) and not isinstance(v, bool)


def _check_trace_times(t: np.ndarray) -> None:
    """Trace arrival times are finite seconds >= 0 in order (requests are issued by row; a
    row earlier in time than the one before would arrive late): a ConfigError names the row."""
    bad = np.flatnonzero(~np.isfinite(t) | (t < 0))
    if len(bad):
        raise ConfigError(
            f"the workload's arrival time of request {int(bad[0])} is {t[bad[0]]}: "
            "arrival times must be finite seconds >= 0"
        )
    back = np.flatnonzero(np.diff(t) < 0)
    if len(back):
        i = int(back[0]) + 1
        raise ConfigError(
            f"the workload's arrival times go back at request {i} ({t[i]:g} s after "
            f"{t[i - 1]:g} s): sort the requests by arrival time (pdplan's trace readers do)"
        )


@dataclass(frozen=True)
class Arrivals:
    """How requests enter: "trace" (the workload's timestamps), "poisson" (open loop at
    `rate` req/s, seeded), or "closed" (`concurrency` clients, each sends its next request
    `think_s` after its previous one finishes; what fixed-concurrency benchmarks measure).
    `duration_s`: only requests arriving before it are sent (open loop)."""

    mode: str = "trace"
    rate: float | None = None
    concurrency: int | None = None
    think_s: float = 0.0
    duration_s: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("trace", "poisson", "closed"):
            raise ConfigError(f"unknown arrival mode {self.mode!r}; trace, poisson or closed")
        if self.mode == "poisson" and not (_real(self.rate) and 0 < self.rate <= MAX_RATE):
            raise ConfigError(
                f"poisson arrivals need a rate in (0, {MAX_RATE:g}] requests/s, not {self.rate!r}"
            )
        if self.mode == "closed" and not (_int(self.concurrency) and self.concurrency >= 1):
            raise ConfigError(
                f"closed-loop arrivals need an integer concurrency >= 1, not {self.concurrency!r}"
            )
        if not (_real(self.think_s) and 0 <= self.think_s <= MAX_SPAN_S):
            raise ConfigError(
                f"think time must be a number of seconds in [0, {MAX_SPAN_S:g}], "
                f"not {self.think_s!r}"
            )
        if self.duration_s is not None and not (_real(self.duration_s) and self.duration_s > 0):
            raise ConfigError(
                f"duration must be a positive number of seconds, not {self.duration_s}"
            )
        unused = {  # fields this mode would ignore: refused, not dropped silently
            "rate": self.rate is not None and self.mode != "poisson",
            "concurrency": self.concurrency is not None and self.mode != "closed",
            "think_s": self.think_s != 0 and self.mode != "closed",
            "duration_s": self.duration_s is not None and self.mode == "closed",
        }
        if any(unused.values()):
            names = ", ".join(k for k, v in unused.items() if v)
            raise ConfigError(f"{names} do(es) not apply to {self.mode} arrivals: drop it")

    def times(self, wl: Workload, seed: int) -> np.ndarray | None:
        """Arrival times for open-loop modes (None for closed loop)."""
        if self.mode == "closed":
            if not self.concurrency or self.concurrency < 1:
                raise ConfigError("closed-loop arrivals need concurrency >= 1")
            return None
        if self.mode == "poisson":
            if not self.rate or self.rate <= 0:
                raise ConfigError("poisson arrivals need rate > 0 (requests/s)")
            gaps = np.random.default_rng(seed).exponential(1.0 / self.rate, len(wl))
            t = np.cumsum(gaps)
        elif self.mode == "trace":
            if wl.arrival_s is None:
                raise ConfigError("the workload has no timestamps; give a rate or concurrency")
            t = np.asarray(wl.arrival_s, dtype=np.float64)
            _check_trace_times(t)
        else:
            raise ConfigError(f"unknown arrival mode {self.mode!r}; trace, poisson or closed")
        if self.duration_s is not None:
            t = t[t < self.duration_s]
        return t
