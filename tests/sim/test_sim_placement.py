"""sim.placement: packed pool after pool, or mixed so prefill and decode share nodes."""

from __future__ import annotations

from collections import Counter

import pytest

from pdplan.errors import ConfigError
from pdplan.sim.placement import place


def _items(spec: list[tuple[str, int, int]], hw: str | None = None) -> list:
    """(role, count, GPUs each) pools -> place() items on 8-GPU nodes."""
    return [(hw, g, role, 8) for role, n, g in spec for _ in range(n)]


def _roles_per_node(items: list, nodes: list[int]) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for (_, _, role, _), n in zip(items, nodes, strict=True):
        out.setdefault(n, Counter())[role] += 1
    return out


def test_packed_fills_nodes_in_pool_order() -> None:
    items = _items([("prefill", 4, 2), ("decode", 4, 2)])
    assert place(items) == [0, 0, 0, 0, 1, 1, 1, 1]


def test_mixed_interleaves_roles_in_proportion() -> None:
    items = _items([("prefill", 4, 2), ("decode", 4, 2)])
    per = _roles_per_node(items, place(items, "mixed"))
    assert per == {0: Counter(prefill=2, decode=2), 1: Counter(prefill=2, decode=2)}
    items = _items([("prefill", 2, 2), ("decode", 6, 2)])
    per = _roles_per_node(items, place(items, "mixed"))
    assert per == {0: Counter(prefill=1, decode=3), 1: Counter(prefill=1, decode=3)}
    items = _items([("prefill", 2, 4), ("decode", 4, 2)])  # mixed sizes still fill nodes
    per = _roles_per_node(items, place(items, "mixed"))
    assert per == {0: Counter(prefill=1, decode=2), 1: Counter(prefill=1, decode=2)}


def test_mixed_gives_every_node_its_share_of_each_role() -> None:
    # 2P:tp2+6D:tp1 (10 GPUs, 2 nodes): interleaving by position put both prefills on node 0
    # and left node 1's decodes unreachable for --pairing local; each node gets one now
    items = _items([("prefill", 2, 2), ("decode", 6, 1)])
    per = _roles_per_node(items, place(items, "mixed"))
    assert per == {0: Counter(prefill=1, decode=3), 1: Counter(prefill=1, decode=3)}
    items = _items([("prefill", 2, 4), ("decode", 1, 8)])  # nothing shares: 2 nodes, not 3
    assert sorted(set(place(items, "mixed"))) == [0, 1]


def test_mixed_keeps_hardware_apart_and_big_instances_whole() -> None:
    items = _items([("prefill", 2, 4)], "h100") + _items([("decode", 2, 4)], "h200")
    nodes = place(items, "mixed")
    assert nodes[0] == nodes[1] and nodes[2] == nodes[3] and nodes[0] != nodes[2]
    big = _items([("prefill", 1, 16), ("decode", 1, 8)])  # a 2-node prefill instance
    assert place(big, "mixed") == [0, 2]


def test_an_unknown_placement_is_named() -> None:
    with pytest.raises(ConfigError, match="placement 'spread'; expected one of packed, mixed"):
        place(_items([("prefill", 1, 2)]), "spread")
