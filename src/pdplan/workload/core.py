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

    @property
    def has_hashes(self) -> bool:
        return self.hash_offsets is not None and self.hash_ids is not None

    def take(self, idx: np.ndarray) -> Workload:
        """A new Workload with the requests at positions idx (in that order); meta is kept."""
        idx = np.asarray(idx, dtype=np.int64)
        offsets, ids = self.hash_offsets, self.hash_ids
        if offsets is not None and ids is not None:
            starts, ends = offsets[idx], offsets[idx + 1]
            counts = ends - starts
            offsets = np.zeros(len(idx) + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            # gather index of every hash: start of its request + its position inside it
            pos = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], counts)
            ids = ids[np.repeat(starts, counts) + pos]
        return Workload(
            input_len=self.input_len[idx],
            output_len=self.output_len[idx],
            arrival_s=None if self.arrival_s is None else self.arrival_s[idx],
            hash_offsets=offsets,
            hash_ids=ids,
            block_tokens=self.block_tokens,
            session_id=None if self.session_id is None else self.session_id[idx],
            meta=dict(self.meta),
        )

    def hashes(self, i: int) -> np.ndarray:
        """Prefix block hashes of request i (empty when the trace has none)."""
        if self.hash_offsets is None or self.hash_ids is None:
            return np.empty(0, dtype=np.int64)
        return self.hash_ids[self.hash_offsets[i] : self.hash_offsets[i + 1]]
