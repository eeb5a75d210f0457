"""How requests enter a simulation: trace replay, open-loop Poisson, closed loop."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdplan.errors import ConfigError
from pdplan.workload.core import Workload

__all__ = ["Arrivals"]


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
        if self.mode == "poisson" and not (
            isinstance(self.rate, int | float) and 0 < self.rate < math.inf
        ):
            raise ConfigError(f"poisson arrivals need a rate > 0 requests/s, not {self.rate!r}")
        if self.mode == "closed" and not (
            isinstance(self.concurrency, int) and self.concurrency >= 1
        ):
            raise ConfigError(
                f"closed-loop arrivals need an integer concurrency >= 1, not {self.concurrency!r}"
            )
        if not (isinstance(self.think_s, int | float) and 0 <= self.think_s < math.inf):
            raise ConfigError(f"think time must be a finite number >= 0 s, not {self.think_s!r}")
        if self.duration_s is not None and not (
            isinstance(self.duration_s, int | float) and self.duration_s > 0
        ):
            raise ConfigError(
                f"duration must be a positive number of seconds, not {self.duration_s}"
            )

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
            bad = np.flatnonzero(~np.isfinite(t))
            if len(bad):
                raise ConfigError(
                    f"the workload's arrival time of request {int(bad[0])} is {t[bad[0]]}: "
                    "arrival times must be finite seconds"
                )
        else:
            raise ConfigError(f"unknown arrival mode {self.mode!r}; trace, poisson or closed")
        if self.duration_s is not None:
            t = t[t < self.duration_s]
        return t
