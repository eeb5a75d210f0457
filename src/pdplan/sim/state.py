"""Per-request simulator state: flat typed result columns and lists of in-flight counters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

__all__ = ["DONE", "DROPPED", "PENDING", "RUNNING", "STATE_NAMES", "Detours", "Requests"]

PENDING, RUNNING, DONE, DROPPED = 0, 1, 2, 3  # `state` codes: never arrived (a trace row past
# the run's end), arrived and not finished, finished, dropped (SimResult.drop_reasons says why)
STATE_NAMES = ("not_arrived", "unfinished", "done", "dropped")  # by code, for output files


class Detours:
    """What the per-request columns cannot say about the rare requests that left the usual
    path, for the per-instance time averages (api._time_averages): `parked_s` rid -> s spent
    parked with no decode instance to go to (in no instance's queue); `restart` rid -> when
    its prefilled KV was given up at a role switch and it was routed again (its wait starts
    over); `elsewhere` (instance, s waiting, s prefilling) of the prefill it lost there."""

    __slots__ = ("elsewhere", "parked_s", "restart")

    def __init__(self) -> None:
        self.parked_s: dict[int, float] = {}
        self.restart: dict[int, float] = {}
        self.elsewhere: list[tuple[int, float, float]] = []


_FLOAT_FIELDS = (
    "arrival",  # s, when the client sent it
    "pf_start",  # s, first prefill chunk started
    "pf_end",  # s, prefill (incl. all chunks) done
    "xfer_start",  # s, KV transfer began: the decode instance admitted it (disaggregated)
    "xfer_s",  # s, KV on the wire: from the later of prefill end and xfer_start to the last
    # byte's arrival (+ link latency); the PD hand-off follows it
    "first",  # s, the engine emitted the first output token (the client sees it
    # SimConfig.ttft_overhead_s later)
    "finish",  # s, last output token
)
_INT_FIELDS = (  # C int (4 B): token counts < 2**31
    "inp",  # prompt tokens
    "out",  # output tokens
    "hit",  # prefix-cache hit tokens
    "preempt",  # preemptions suffered
    "p_inst",  # prefill / agg instance index
    "d_inst",  # decode instance index (-1 in aggregated mode)
)
# Working counters, read and written several times per request on the hot paths: Python lists
# (the interpreter specialises list item access: ~2x faster than a memoryview's) at 8 B per
# request each, plus the int objects of values above 256 (~36 MiB more for 1M requests).
_LIST_FIELDS = (
    "todo",  # prompt tokens still to prefill (or KV tokens of a swapped-out request)
    "pdone",  # prompt tokens already in KV (prefix hits + finished chunks)
    "gen",  # tokens generated so far (updated at preemption and finish)
    "ctx0",  # KV tokens when it joined the batch
    "not_before",  # s, earliest KV delivery (layer-wise transfer; 0 otherwise)
)


class Requests:
    """Fields of n requests. Results and inputs are columns, typed memoryviews over bytearrays
    (~80 B per request in all): the event loop touches one element at a time, and memoryview
    item access is ~1.5x faster than array.array's (whose stores go through PyArg_Parse) and
    ~5x faster than numpy scalar access. The working counters (_LIST_FIELDS) are lists."""

    if TYPE_CHECKING:  # set by __init__ (most with setattr, from the field lists above)
        arrival: memoryview[float]
        pf_start: memoryview[float]
        pf_end: memoryview[float]
        xfer_start: memoryview[float]
        xfer_s: memoryview[float]
        first: memoryview[float]
        finish: memoryview[float]
        inp: memoryview[int]
        out: memoryview[int]
        hit: memoryview[int]
        preempt: memoryview[int]
        p_inst: memoryview[int]
        d_inst: memoryview[int]
        state: memoryview[int]
        todo: list[int]
        pdone: list[int]
        gen: list[int]
        ctx0: list[int]
        not_before: list[float]

    def __init__(self, inp: np.ndarray, out: np.ndarray) -> None:
        n = len(inp)
        self.n = n
        for f in _FLOAT_FIELDS:
            setattr(self, f, _column(bytes(8 * n), "d"))
        for f in _INT_FIELDS:
            setattr(self, f, _column(bytes(4 * n), "i"))
        self.inp = _column(np.asarray(inp, dtype=np.intc).tobytes(), "i")
        self.out = _column(np.asarray(out, dtype=np.intc).tobytes(), "i")
        self.state = _column(bytes(n), "b")
        for f in ("pf_start", "pf_end", "xfer_start", "xfer_s", "first", "finish", "arrival"):
            setattr(self, f, _column(np.full(n, np.nan).tobytes(), "d"))
        self.d_inst = _column(np.full(n, -1, np.intc).tobytes(), "i")
        self.p_inst = _column(np.full(n, -1, np.intc).tobytes(), "i")  # -1: not placed
        for f in _LIST_FIELDS:
            setattr(self, f, [0.0 if f == "not_before" else 0] * n)

    def column(self, name: str) -> np.ndarray:
        """A numpy view of one field (no copy; it keeps the buffer alive)."""
        mv = getattr(self, name)
        dt = {"d": np.float64, "q": np.int64, "i": np.intc, "b": np.int8}[mv.format]
        return np.frombuffer(mv, dtype=dt)


def _column(raw: bytes, fmt: Literal["d", "q", "i", "b"]) -> memoryview[Any]:
    """A writable memoryview of format fmt ('d', 'q', 'i', 'b') over a copy of raw."""
    return memoryview(bytearray(raw)).cast(fmt)
