"""Hash ids of the careful (line by line) readers: int64, or uint64 64-bit hashes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pdplan.workload.values import BadValue

if TYPE_CHECKING:
    from pdplan.workload._build import Builder

__all__ = ["check_hash_range", "hash_array"]

_U64 = 2**64  # ids in [2**63, 2**64) are uint64 (e.g. xxh64 hashes printed unsigned)


def check_hash_range(ids: list[int]) -> None:
    """Hash ids of one row: int64 or uint64 (64-bit hashes, e.g. xxh64, print unsigned)."""
    if ids and (min(ids) < -(2**63) or max(ids) >= _U64):
        raise BadValue("hash id out of 64-bit range (int64 or uint64)")


def hash_array(ids: list[int], big: bool, b: Builder) -> np.ndarray:
    """The careful readers' hash ids: int64, or uint64 when one is >= 2**63 (`big`)."""
    if not big:
        return np.array(ids, dtype=np.int64)
    if min(ids) < 0:
        b.hash_negative = True  # finish() refuses the mix
        return np.array([i % _U64 for i in ids], dtype=np.uint64)
    return np.array(ids, dtype=np.uint64)
