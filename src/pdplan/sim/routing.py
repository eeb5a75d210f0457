"""Routing policies: which prefill / agg instance takes a request, which decode pairs with it."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdplan.sim._hosts import InstanceHost
    from pdplan.sim.engine import Instance

__all__ = ["Router", "least_kv_share", "least_loaded"]

# Prefix affinity gives way to load when the best-matching instance has more than this many
# outstanding tokens above the least-loaded one (SGLang cache_aware's balance threshold idea;
# the value is ours, not SGLang's default).
AFFINITY_SLACK_TOKENS = 32768


class Router:
    """Stateful chooser (round-robin counter, seeded RNG for power-of-two choices, and a
    rotating start that spreads least-loaded ties)."""

    def __init__(self, policy: str, seed: int) -> None:
        self.policy = policy
        self._rr = 0
        self._tie = 0  # where the next least-loaded scan starts
        # --pairing local: one rotating start per node. The shared _tie would alias: with two
        # nodes' prefill instances taking turns, node 0's always read it even and node 1's odd,
        # so each paired with the same one of its node's idle decode instances every time.
        self._tie_node: dict[int, int] = {}
        self._rng = random.Random(seed)

    def least(self, cands: Sequence[Instance]) -> Instance:
        """The least-loaded of cands, the scan's first guess rotating over them (least_loaded):
        idle instances take turns with a light load, as a router that breaks ties at random
        spreads it (Dynamo's KV router, llm-d's scorers), deterministically. Inlined in
        Simulator._enter and _pair; keep them in step."""
        s = self._tie
        if s >= len(cands):
            s = 0
        self._tie = s + 1
        return least_loaded(cands, s)

    def choose(
        self,
        cands: Sequence[Instance],
        hashes: Sequence[int] = (),
        near: InstanceHost | None = None,
    ) -> Instance:
        """Pick one of cands (non-empty). `hashes`: the request's prefix blocks; `near`: the
        prefill instance, for the "local" pairing policy."""
        p = self.policy
        if len(cands) == 1:
            return cands[0]
        if p == "least_tokens":
            return self.least(cands)
        if p == "kv_usage":
            s = self._tie
            if s >= len(cands):
                s = 0
            self._tie = s + 1
            return least_kv_share(cands, s)
        if p == "round_robin":  # the first request goes to the first candidate
            i = self._rr
            self._rr = i + 1
            return cands[i % len(cands)]
        if p == "p2c":
            a, b = self._rng.sample(range(len(cands)), 2)
            ia, ib = cands[a], cands[b]
            return ia if ia.outstanding <= ib.outstanding else ib
        if p == "prefix" and hashes:
            return _affinity(cands, hashes)
        if p == "local" and near is not None:
            node = near.spec.node
            same = [c for c in cands if c.spec.node == node]
            if same:
                s = self._tie_node.get(node, 0)
                if s >= len(same):
                    s = 0
                self._tie_node[node] = s + 1
                return least_loaded(same, s)
        return self.least(cands)


def _load(inst: Instance) -> int:
    return inst.outstanding


def least_loaded(cands: Sequence[Instance], start: int = 0) -> Instance:
    """An instance with the fewest outstanding tokens: cands[start] if it has, else the first
    such (= min(cands, key=_load) for start 0, but a plain loop is ~2x faster than min()
    with a key for a handful of candidates; one pass, so it can be inlined in hot paths)."""
    best = cands[start]
    low = best.outstanding
    for c in cands:
        o = c.outstanding
        if o < low:
            best, low = c, o
    return best


def least_kv_share(cands: Sequence[Instance], start: int = 0) -> Instance:
    """An instance whose tokens in flight take the smallest share of its KV pool
    (outstanding / cap, dimensionless): llm-d's kv-cache-utilization scorer picks the pod with
    the least KV use (its share of the pool, not tokens), so a pool on a larger GPU takes
    more of the load where least_tokens would give each instance the same tokens. In flight
    rather than resident, so what is queued counts too. Ties: cands[start], as least_loaded."""
    best = cands[start]
    low = best.outstanding / best.cap
    for c in cands:
        share = c.outstanding / c.cap
        if share < low:
            best, low = c, share
    return best


def _affinity(cands: Sequence[Instance], hashes: Sequence[int]) -> Instance:
    """Most cached leading blocks wins, unless it is much busier than the least loaded."""
    best, best_m = None, -1
    for c in cands:
        m = c.cache.match(hashes) if c.cache is not None else 0
        if m > best_m or (m == best_m and best is not None and c.outstanding < best.outstanding):
            best, best_m = c, m
    least = least_loaded(cands)
    assert best is not None
    if best_m == 0 or best.outstanding > least.outstanding + AFFINITY_SLACK_TOKENS:
        return least
    return best
