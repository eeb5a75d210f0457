"""Per-request simulator state as flat typed arrays (8 B or less per field per request)."""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["DONE", "DROPPED", "PENDING", "RUNNING", "Requests"]

PENDING, RUNNING, DONE, DROPPED = 0, 1, 2, 3

_FLOAT_FIELDS = (
    "arrival",  # s, when the client sent it
    "pf_start",  # s, first prefill chunk started
    "pf_end",  # s, prefill (incl. all chunks) done
    "xfer_s",  # s, KV transfer duration (disaggregated)
    "first",  # s, first output token at the client
    "finish",  # s, last output token
    "not_before",  # s, earliest KV delivery (layer-wise transfer)
)
_INT_FIELDS = (
    "inp",  # prompt tokens
    "out",  # output tokens
    "todo",  # prompt tokens still to prefill (or KV tokens of a swapped-out request)
    "pdone",  # prompt tokens already in KV (prefix hits + finished chunks)
    "hit",  # prefix-cache hit tokens
    "gen",  # tokens generated so far (updated at preemption and finish)
    "k0",  # decode step counter of the instance when it joined the batch
    "ctx0",  # KV tokens when it joined the batch
    "epoch",  # bumped at preemption to invalidate a finish-heap entry
    "preempt",  # preemptions suffered
    "p_inst",  # prefill / agg instance index
    "d_inst",  # decode instance index (-1 in aggregated mode)
)


class Requests:
    """Columns of n requests; Python `array` (not numpy) because the event loop touches one
    element at a time and numpy scalar access is ~5x slower."""

    def __init__(self, inp: np.ndarray, out: np.ndarray) -> None:
        n = len(inp)
        self.n = n
        zf = array("d", bytes(8 * n))
        zi = array("q", bytes(8 * n))
        for f in _FLOAT_FIELDS:
            setattr(self, f, array("d", zf))
        for f in _INT_FIELDS:
            setattr(self, f, array("q", zi))
        self.inp = array("q", np.asarray(inp, dtype=np.int64).tobytes())
        self.out = array("q", np.asarray(out, dtype=np.int64).tobytes())
        self.state = array("b", bytes(n))
        for f in ("pf_start", "pf_end", "first", "finish", "arrival"):
            getattr(self, f)[:] = array("d", [float("nan")]) * n
        self.d_inst[:] = array("q", [-1]) * n

    def column(self, name: str) -> np.ndarray:
        """A numpy copy of one field."""
        a = getattr(self, name)
        return np.frombuffer(
            a, dtype={"d": np.float64, "q": np.int64, "b": np.int8}[a.typecode]
        ).copy()
