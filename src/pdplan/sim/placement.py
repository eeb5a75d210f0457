"""Instances onto NVLink nodes: packed in pool order, or mixed so P and D share nodes."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pdplan.errors import ConfigError

__all__ = ["PLACEMENTS", "place"]

# packed: pool after pool (a 4P:tp2+4D:tp2 cluster on 8-GPU nodes puts the prefill
# instances on node 0 and the decode ones on node 1: every KV transfer crosses the NICs);
# mixed: each role spread evenly over the fewest nodes that hold the cluster (nodes of 2 P + 2 D
# there), so a P -> D pairing that prefers its own node (--pairing local) moves KV over NVLink,
# as Dynamo / llm-d deployments that co-locate prefill and decode workers on a node do.
PLACEMENTS = ("packed", "mixed")

Item = tuple[str | None, int, str, int]  # (hardware, GPUs, role, GPUs per node)


def place(items: Sequence[Item], how: str = "packed") -> list[int]:
    """The node of each instance. items: (hardware, GPUs, role, GPUs per node) of each
    instance in pool order. An instance never straddles a node unless it is larger than one,
    and instances on different hardware never share one (each hardware's nodes are its own)."""
    if how not in PLACEMENTS:
        raise ConfigError(f"placement {how!r}; expected one of {', '.join(PLACEMENTS)}")
    if how == "packed":
        packer = _Nodes()
        return [packer.place(hw, gpus, per) for hw, gpus, _, per in items]
    nodes, first = [0] * len(items), 0
    for hw in dict.fromkeys(it[0] for it in items):  # hardware in first-seen order
        mine = [i for i, it in enumerate(items) if it[0] == hw]
        first = _spread(items, mine, nodes, first)
    return nodes


def _spread(items: Sequence[Item], mine: list[int], nodes: list[int], first: int) -> int:
    """Place one hardware's instances from node `first` on: those larger than a node on whole
    nodes of their own; the rest role by role (largest instances first), the j-th of a role
    on the j-th node (mod the node count) or the next with room, so every node gets its share
    of each role. Returns the next free node number."""
    per = items[mine[0]][3]
    big = [i for i in mine if items[i][1] > per]
    for i in big:
        nodes[i], first = first, first + math.ceil(items[i][1] / per)
    small = [i for i in mine if items[i][1] <= per]
    free = [per] * max(1, math.ceil(sum(items[i][1] for i in small) / per)) if small else []
    roles = sorted(dict.fromkeys(items[i][2] for i in small),
                   key=lambda r: -max(items[i][1] for i in small if items[i][2] == r))  # fmt: skip
    for role in roles:
        these = sorted((i for i in small if items[i][2] == role), key=lambda i: -items[i][1])
        for j, i in enumerate(these):
            nodes[i] = first + _fit(free, items[i][1], j % len(free), per)
    return first + len(free)


def _fit(free: list[int], gpus: int, start: int, per: int) -> int:
    """The first node from `start` (wrapping) with `gpus` GPUs free; a new node of `per`
    GPUs if none has room."""
    n = len(free)
    for k in range(n):
        node = (start + k) % n
        if free[node] >= gpus:
            free[node] -= gpus
            return node
    free.append(per - gpus)
    return n


class _Nodes:
    """Next-fit packing onto NVLink nodes: an instance never straddles a node unless it is
    larger than one, and an instance on other hardware starts a new node."""

    hw: str | None  # the current node's hardware ("" before the first instance)

    def __init__(self) -> None:
        self.node, self.used, self.hw = 0, 0, ""

    def place(self, hw: str | None, gpus: int, per_node: int) -> int:
        """The node of the next instance of `gpus` GPUs on hardware `hw`."""
        if self.used and (hw != self.hw or self.used + gpus > per_node):
            self.node, self.used = self.node + 1, 0
        self.hw, node = hw, self.node
        self.used += gpus
        if self.used >= per_node:
            self.node, self.used = self.node + self.used // per_node, 0
        return node
