"""Per-request simulator state as flat typed columns (~113 B per request in all)."""

from __future__ import annotations

import numpy as np

__all__ = ["DONE", "DROPPED", "PENDING", "RUNNING", "STATE_NAMES", "Requests"]

PENDING, RUNNING, DONE, DROPPED = 0, 1, 2, 3  # `state` codes: never arrived (a trace row past
# the run's end), arrived and not finished, finished, dropped (SimResult.drop_reasons says why)
STATE_NAMES = ("not_arrived", "unfinished", "done", "dropped")  # by code, for output files

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
    "not_before",  # s, earliest KV delivery (layer-wise transfer)
)
_INT_FIELDS = (  # C int (4 B): token counts < 2**31
    "inp",  # prompt tokens
    "out",  # output tokens
    "todo",  # prompt tokens still to prefill (or KV tokens of a swapped-out request)
    "pdone",  # prompt tokens already in KV (prefix hits + finished chunks)
    "hit",  # prefix-cache hit tokens
    "gen",  # tokens generated so far (updated at preemption and finish)
    "ctx0",  # KV tokens when it joined the batch
    "epoch",  # bumped at preemption to invalidate a finish-heap entry
    "preempt",  # preemptions suffered
    "p_inst",  # prefill / agg instance index
    "d_inst",  # decode instance index (-1 in aggregated mode)
)
_LONG_FIELDS = ("k0",)  # 8 B: decode step counter of the instance when it joined the batch


class Requests:
    """Columns of n requests as typed memoryviews over bytearrays: the event loop touches one
    element at a time, and memoryview item access is ~1.5x faster than array.array's (whose
    stores go through PyArg_Parse) and ~5x faster than numpy scalar access."""

    def __init__(self, inp: np.ndarray, out: np.ndarray) -> None:
        n = len(inp)
        self.n = n
        for f in _FLOAT_FIELDS:
            setattr(self, f, _column(bytes(8 * n), "d"))
        for f in _LONG_FIELDS:
            setattr(self, f, _column(bytes(8 * n), "q"))
        for f in _INT_FIELDS:
            setattr(self, f, _column(bytes(4 * n), "i"))
        self.inp = _column(np.asarray(inp, dtype=np.intc).tobytes(), "i")
        self.out = _column(np.asarray(out, dtype=np.intc).tobytes(), "i")
        self.state = _column(bytes(n), "b")
        for f in ("pf_start", "pf_end", "xfer_start", "first", "finish", "arrival"):
            setattr(self, f, _column(np.full(n, np.nan).tobytes(), "d"))
        self.d_inst = _column(np.full(n, -1, np.intc).tobytes(), "i")
        self.p_inst = _column(np.full(n, -1, np.intc).tobytes(), "i")  # -1: not placed

    def column(self, name: str) -> np.ndarray:
        """A numpy view of one field (no copy; it keeps the buffer alive)."""
        mv = getattr(self, name)
        dt = {"d": np.float64, "q": np.int64, "i": np.intc, "b": np.int8}[mv.format]
        return np.frombuffer(mv, dtype=dt)


def _column(raw: bytes, fmt: str) -> memoryview:
    """A writable memoryview of format fmt ('d', 'q', 'i', 'b') over a copy of raw."""
    return memoryview(bytearray(raw)).cast(fmt)
