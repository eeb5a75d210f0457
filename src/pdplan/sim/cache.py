"""Per-instance prefix cache: an LRU set of block hashes with a capacity in blocks."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence

__all__ = ["PrefixCache"]


class PrefixCache:
    """Blocks are identified by the workload's hash ids; a prompt hits the longest run of its
    leading blocks that are cached (block-granular prefix caching, as vLLM / SGLang do).

    A prompt's blocks are refreshed tail first, so its head ends up most recent and eviction
    takes a prefix's tail blocks before its head: vLLM V1 frees a request's blocks in reverse
    order, tail first, to its LRU free queue (SingleTypeKVCacheManager.free), and SGLang's
    radix cache evicts leaves. Evicting the head first would leave the rest unreachable (a
    hit needs the leading blocks) yet still filling the capacity.

    A hybrid model (SSM / linear-attention layers, `state_blocks` > 0) cannot resume from any
    cached block: its recurrent layers need their state at the hit's last token, and a state
    is saved only where a prefill step ended, so a hit stops at the deepest matched block
    that carries one (SGLang's MambaRadixCache matches up to the last node with a mamba
    value and saves one per cached chunk and prompt end, cache_unfinished_req; vLLM's
    MambaManager.find_longest_cache_hit looks for the last block with a cached state, saved
    at block-aligned step ends in its 'align' mode). Two prompts that share a system prompt
    but part after it share no state there, where attention layers alone would reuse the
    shared blocks. Each saved state takes `state_blocks` blocks of the capacity (the
    sequence's recurrent state in KV-pool tokens / block size) and is dropped with its
    block."""

    def __init__(self, capacity_blocks: int, state_blocks: float = 0.0) -> None:
        self.capacity = capacity_blocks
        self.state_blocks = state_blocks  # blocks one saved recurrent state costs; 0: none
        self._lru: OrderedDict[int, None] = OrderedDict()
        self._states: set[int] = set()  # blocks at whose last token a state is saved
        self.hits = 0
        self.lookups = 0

    def __len__(self) -> int:
        return len(self._lru)

    @property
    def states(self) -> int:
        """Recurrent states saved (hybrid models; 0 otherwise)."""
        return len(self._states)

    def match(self, hashes: Sequence[int]) -> int:
        """Leading blocks of `hashes` a prefill may skip (does not touch recency): those
        present in the cache, for a hybrid model up to the deepest one with a saved state."""
        lru = self._lru
        n = 0
        if self.state_blocks:
            states, best = self._states, 0
            for h in hashes:
                if h not in lru:
                    break
                n += 1
                if h in states:
                    best = n
            return best
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
        self._states.clear()

    def insert(self, hashes: Sequence[int], state_after: Iterable[int] = ()) -> None:
        """Cache all blocks of a prefilled prompt (or of its chunks so far), evicting least-
        recently-used blocks. state_after: for a hybrid model, block counts k after whose
        k-th block a recurrent state is saved (its prefill steps' ends on the block grid)."""
        lru = self._lru
        for h in reversed(hashes):  # tail first: the head is evicted last (class docstring)
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
        states = self._states
        if self.state_blocks:
            states.update(hashes[k - 1] for k in state_after if 0 < k <= len(hashes))
        while len(lru) + math.ceil(len(states) * self.state_blocks) > self.capacity and lru:
            h, _ = lru.popitem(last=False)
            states.discard(h)  # a state lives no longer than its block
