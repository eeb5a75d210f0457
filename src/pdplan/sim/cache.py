"""Per-instance prefix cache: an LRU set of block hashes with a capacity in blocks."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["PrefixCache"]


class PrefixCache:
    """Blocks are identified by the workload's hash ids; a prompt hits the longest run of its
    leading blocks that are cached (block-granular prefix caching, as vLLM / SGLang do)."""

    def __init__(self, capacity_blocks: int) -> None:
        self.capacity = capacity_blocks
        self._lru: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.lookups = 0

    def __len__(self) -> int:
        return len(self._lru)

    def match(self, hashes: Sequence[int]) -> int:
        """Leading blocks of `hashes` present in the cache (does not touch recency)."""
        lru = self._lru
        n = 0
        for h in hashes:
            if h not in lru:
                break
            n += 1
        return n

    def lookup(self, hashes: Sequence[int]) -> int:
        """Like match(), but counts the lookup and refreshes the hit blocks."""
        n = self.match(hashes)
        self.lookups += 1
        self.hits += n
        for h in hashes[:n]:
            self._lru.move_to_end(h)
        return n

    def clear(self) -> None:
        """Forget every block (the instance's KV pool was given to another role); the hit
        and lookup counts stay."""
        self._lru.clear()

    def insert(self, hashes: Sequence[int]) -> None:
        """Cache all blocks of a prefilled prompt, evicting least-recently-used blocks."""
        lru = self._lru
        for h in hashes:
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
        while len(lru) > self.capacity:
            lru.popitem(last=False)
