"""Per-instance prefix cache: an LRU set of block hashes with a capacity in blocks."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["PrefixCache"]


class PrefixCache:
    """Blocks are identified by the workload's hash ids; a prompt hits the longest run of its
    leading blocks that are cached (block-granular prefix caching, as vLLM / SGLang do).

    A prompt's blocks are refreshed tail first, so its head ends up most recent and eviction
    takes a prefix's tail blocks before its head: vLLM V1 frees a request's blocks in reverse
    order, tail first, to its LRU free queue (SingleTypeKVCacheManager.free), and SGLang's
    radix cache evicts leaves. Evicting the head first would leave the rest unreachable (a
    hit needs the leading blocks) yet still filling the capacity."""

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
        for h in reversed(hashes[:n]):  # tail first: the head stays most recent
            self._lru.move_to_end(h)
        return n

    def clear(self) -> None:
        """Forget every block (the instance's KV pool was given to another role); the hit
        and lookup counts stay."""
        self._lru.clear()

    def insert(self, hashes: Sequence[int]) -> None:
        """Cache all blocks of a prefilled prompt, evicting least-recently-used blocks."""
        lru = self._lru
        for h in reversed(hashes):  # tail first: the head is evicted last (class docstring)
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
        while len(lru) > self.capacity:
            lru.popitem(last=False)
