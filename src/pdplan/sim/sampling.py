"""Timeline samples of one instance: queued / running requests, KV in use and its state."""

from __future__ import annotations

import struct

from pdplan.sim._hosts import InstanceHost
from pdplan.sim.steps import steps_within

__all__ = ["SampleMixin"]

_ROLE_CODE = {"agg": 0, "prefill": 1, "decode": 2}  # sim.metrics.SAMPLE_STATES indices
# one sample's 5 doubles as array("d") holds them: frombytes of one pack is ~5x cheaper than
# array.extend of a tuple, which parses item by item (the same double conversions)
_SAMPLE_PACK = struct.Struct("=5d").pack


class SampleMixin(InstanceHost):
    """Instance.sample (Simulator._sample_tick calls it every sample_interval_s)."""

    __slots__ = ()

    def sample(self, now: float) -> None:
        """Timeline sample at `now` (Simulator._sample_tick, every sample_interval_s), counted
        as the summary's time averages are (sim/api.py): prompts not yet started (the ones a
        recv interval or context gate still holds in the inbox too) and requests waiting for a
        decode slot are queued; the decode batch, and on a prefill instance the
        prompts being prefilled, are running (an aggregated instance's prompts mid-prefill are
        neither, as in the summary). Requests whose KV has arrived (`ready`: exact mode joins
        them at the next step boundary, event skipping at once) are running, as the summary
        counts them from KV delivered. Inside a decode run the batch is constant and its KV
        has grown by B a step for the steps done by now (steps_within)."""
        pf, b = self.prefilling, self.B
        run = b + len(self.ready) + (pf if self.role == "prefill" else 0)
        kv = self.kv_now(now)
        state = 4 if self.offline else 3 if self.draining else _ROLE_CODE[self.role]
        queued = max(0, len(self.pq) - pf) + len(self.jq) + len(self.inbox)  # inbox: not polled
        self.samples.frombytes(_SAMPLE_PACK(now, queued, run, kv, state))

    def kv_now(self, now: float) -> int:
        """KV tokens in use at `now`: kv_used, plus inside a decode run the B tokens a step
        of the steps done by now (steps_within; the run accounts them only at its end)."""
        kv, b = self.kv_used, self.B
        if self.in_run and self.busy and b and now > self.tK:
            c = self.run_c
            kv += b * min(self.run_n, steps_within(now - self.tK, self.run_a, c * b, c * self.C))
        return kv
