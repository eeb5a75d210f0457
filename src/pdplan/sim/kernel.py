"""Discrete-event kernel: a heap keyed by (time, priority, sequence), step() and run(until)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from pdplan.errors import PdplanError

heappush = heapq.heappush

__all__ = ["EventLoop", "SimulationError"]

# Priorities at equal times (lower runs first): instance step boundaries before network
# completions before arrivals, so work that ends at t is visible to what arrives at t.
PRIO_BOUNDARY = 0
PRIO_NETWORK = 1
PRIO_ARRIVAL = 2
PRIO_CONTROL = 3
PRIO_SAMPLE = 4  # timeline samples see the state after everything else at their instant

_Heap = list[tuple[float, int, int, Callable[[Any], None], Any]]


class SimulationError(PdplanError):
    """The simulation reached an impossible state (an event in the past, a bad handler)."""


class EventLoop:
    """A min-heap of events. Each event is (time_s, priority, seq, handler, arg); `seq` is a
    strictly increasing counter, so equal (time, priority) pairs run in scheduling order and a
    run is deterministic for a given seed. Hot paths of the simulator push
    (t, prio, next(loop.seq), handler, arg) onto `loop.heap` directly, skipping the past-time
    check of schedule() (their times are now plus a non-negative duration by construction)."""

    __slots__ = ("_heap", "_peeks", "events_run", "now", "seq")

    def __init__(self) -> None:
        self._heap: _Heap = []
        self.seq = itertools.count(1)
        self._peeks = 0
        self.now = 0.0
        self.events_run = 0

    def schedule(self, time_s: float, prio: int, handler: Callable[[Any], None], arg: Any) -> None:
        """Run handler(arg) at time_s (seconds); times before `now` are an error."""
        if time_s < self.now:
            raise SimulationError(f"event scheduled at {time_s:.9f} s, before now={self.now:.9f} s")
        heappush(self._heap, (time_s, prio, next(self.seq), handler, arg))

    @property
    def heap(self) -> _Heap:
        return self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def peek_time(self) -> float:
        """Time of the next event, or +inf when the heap is empty."""
        return self._heap[0][0] if self._heap else float("inf")

    def step(self) -> bool:
        """Run the next event; False when there is none."""
        if not self._heap:
            return False
        t, _, _, handler, arg = heapq.heappop(self._heap)
        self.now = t
        self.events_run += 1
        handler(arg)
        return True

    def run(self, until: float = float("inf"), max_events: int | None = None) -> int:
        """Run events with time <= until (and at most max_events); returns how many ran."""
        if until == float("inf") and max_events is None:
            return self._drain()
        limit = max_events if max_events is not None else -1
        n = _pump_until(self, self._heap, until, limit)
        self.events_run += n
        if n != limit and until != float("inf") and self.now < until:
            self.now = until
        return n

    def _drain(self) -> int:
        """Run every event: the tightest loop (no time or count tests); the count of events
        comes from the sequence counter (pushes) and the heap's size before and after."""
        heap = self._heap
        p0, h0 = self._pushes(), len(heap)
        _pump(self, heap)
        n = self._pushes() - p0 + h0
        self.events_run += n
        return n

    def _pushes(self) -> int:
        """Events pushed so far (reading the counter consumes a number; only order matters)."""
        self._peeks += 1
        return next(self.seq) - self._peeks


def _pump(loop: EventLoop, heap: _Heap) -> None:
    """The drain loop: pop and run events until the heap is empty."""
    pop = heapq.heappop
    while heap:
        t, _, _, handler, arg = pop(heap)
        loop.now = t
        handler(arg)


def _pump_until(loop: EventLoop, heap: _Heap, until: float, limit: int) -> int:
    """Run events with time <= until, at most `limit` of them (-1: no limit); how many ran."""
    pop = heapq.heappop
    n = 0
    while heap and heap[0][0] <= until and n != limit:
        t, _, _, handler, arg = pop(heap)
        loop.now = t
        handler(arg)
        n += 1
    return n


# CPython 3.11 specialises ("quickens") a function's bytecode only after a few calls, never
# inside one long-running call, so the drain loop, entered once per run, would execute generic
# instructions for every event. Calls on an empty heap warm it up (about 2 % fewer machine
# instructions per simulated request); harmless on later Pythons, which warm up loops too.
for _ in range(16):
    _pump(EventLoop(), [])
    _pump_until(EventLoop(), [], 0.0, -1)
