"""Workload: a columnar set of requests (arrival, input/output lengths, prefix blocks, session)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pdplan.errors import InputError

__all__ = ["Workload"]


@dataclass(frozen=True, eq=False)
class Workload:
    """Requests as parallel numpy arrays, cheap for 10M rows (~20 B per request without hashes).

    arrival_s:   float64 seconds from the start, sorted ascending; None for a pure length
                 distribution (no times).
    input_len:   int32 prompt tokens (>= 1 after validation; 0 kept only if a reader reports it).
    output_len:  int32 generated tokens.
    hash_offsets / hash_ids: ragged prefix-block hashes (CSR layout): request i owns
                 hash_ids[hash_offsets[i]:hash_offsets[i+1]]; None when the trace has none.
    block_tokens: tokens per hash block (512 in Mooncake FAST'25 traces).
    session_id:  int64 per request, or None.
    meta:        reader notes: source path, format, counts of skipped / clipped rows and why.
    """

    input_len: np.ndarray
    output_len: np.ndarray
    arrival_s: np.ndarray | None = None
    hash_offsets: np.ndarray | None = None
    hash_ids: np.ndarray | None = None
    block_tokens: int = 512
    session_id: np.ndarray | None = None
    meta: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.input_len)
        if len(self.output_len) != n:
            raise InputError(f"{n} input lengths but {len(self.output_len)} output lengths")
        if self.arrival_s is not None and len(self.arrival_s) != n:
            raise InputError(f"{n} requests but {len(self.arrival_s)} arrival times")
        if self.hash_offsets is not None and len(self.hash_offsets) != n + 1:
            raise InputError("hash_offsets must have one entry per request plus one")

    def __len__(self) -> int:
        return len(self.input_len)

    @property
    def has_times(self) -> bool:
        return self.arrival_s is not None

    def hashes(self, i: int) -> np.ndarray:
        """Prefix block hashes of request i (empty when the trace has none)."""
        if self.hash_offsets is None or self.hash_ids is None:
            return np.empty(0, dtype=np.int64)
        return self.hash_ids[self.hash_offsets[i] : self.hash_offsets[i + 1]]
