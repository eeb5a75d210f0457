"""Workload: a columnar set of requests (arrival, input/output lengths, prefix blocks, session)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np

from pdplan.workload._checks import block_tokens, checked_columns, hash_columns, take_index

__all__ = ["NO_SESSION", "STRING_SESSIONS", "Workload"]

# Session ids at or below this mark rows that carried none (readers give each such row an id
# of its own, counting down from it: a session of one); writers write them back as empty.
# Ids of string keys count down from STRING_SESSIONS, far from both real traces' integer ids
# (>= 0, or small negatives) and these.
NO_SESSION = -(2**62)
STRING_SESSIONS = -(2**61)


@dataclass(frozen=True, eq=False)
class Workload:
    """Requests as parallel numpy arrays, cheap for 10M rows (~20 B per request without hashes).

    arrival_s:   float64 seconds from the start, finite and >= 0 (readers sort it ascending;
                 take() may reorder it); None for a pure length distribution (no times).
    input_len:   int32 prompt tokens in [0, INT32_MAX] (0 kept only if a reader reports it;
                 the simulator drops it with a reason); whole-valued floats are converted.
    output_len:  int32 generated tokens, same rules.
    hash_offsets / hash_ids: ragged prefix-block hashes (CSR layout): request i owns
                 hash_ids[hash_offsets[i]:hash_offsets[i+1]]; None when the trace has none.
    block_tokens: tokens per hash block (512 in Mooncake FAST'25 traces).
    session_id:  an integer id per request (readers give int64), or None; ids <= NO_SESSION
                 mark rows that had none.
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
        """Check every column (vectorised); store lengths as int32, arrivals as float64."""
        cols = checked_columns(self.input_len, self.output_len, self.arrival_s, self.session_id)
        offsets, ids = hash_columns(
            self.hash_offsets, self.hash_ids, len(cast(np.ndarray, cols["input_len"]))
        )
        cols.update(hash_offsets=offsets, hash_ids=ids)
        for name, value in cols.items():
            object.__setattr__(self, name, value)  # frozen: set the checked, converted arrays
        object.__setattr__(self, "block_tokens", block_tokens(self.block_tokens))

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
        idx = take_index(idx, len(self))
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
