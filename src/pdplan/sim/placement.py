"""Instances onto NVLink nodes: packed in pool order, or mixed so P and D share nodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pdplan.errors import ConfigError

__all__ = ["PLACEMENTS", "place"]

# packed: pool after pool (a 4P:tp2+4D:tp2 cluster on 8-GPU nodes puts the prefill
# instances on node 0 and the decode ones on node 1: every KV transfer crosses the NICs);
# mixed: the roles interleaved in proportion (nodes of 2 P + 2 D there), so a P -> D pairing
# that prefers its own node (--pairing local) moves KV over NVLink, as Dynamo / llm-d
# deployments that co-locate prefill and decode workers on a node do.
PLACEMENTS = ("packed", "mixed")


def place(items: Sequence[tuple[str | None, int, str, int]], how: str = "packed") -> list[int]:
    """The node of each instance. items: (hardware, GPUs, role, GPUs per node) of each
    instance in pool order. An instance never straddles a node unless it is larger than one,
    and instances on different hardware never share one (each hardware's nodes are its own)."""
    if how not in PLACEMENTS:
        raise ConfigError(f"placement {how!r}; expected one of {', '.join(PLACEMENTS)}")
    order = list(range(len(items)))
    if how == "mixed":
        order.sort(key=_mixed_key(items))
    nodes, packer = [0] * len(items), _Nodes()
    for i in order:
        hw, gpus, _, per_node = items[i]
        nodes[i] = packer.place(hw, gpus, per_node)
    return nodes


def _mixed_key(
    items: Sequence[tuple[str | None, int, str, int]],
) -> Callable[[int], tuple[int, float, int]]:
    """Sort key interleaving the roles of each hardware in proportion: the j-th of a role's
    n instances on a hardware sits at (j + 1/2) / n; hardware keeps its first-seen order."""
    first: dict[str | None, int] = {}
    total: dict[tuple[str | None, str], int] = {}
    for hw, _, role, _ in items:
        first.setdefault(hw, len(first))
        total[hw, role] = total.get((hw, role), 0) + 1
    seen: dict[tuple[str | None, str], int] = {}
    key: list[tuple[int, float, int]] = []
    for i, (hw, _, role, _) in enumerate(items):
        j = seen[hw, role] = seen.get((hw, role), -1) + 1
        key.append((first[hw], (j + 0.5) / total[hw, role], i))
    return key.__getitem__


class _Nodes:
    """Next-fit packing onto NVLink nodes: an instance never straddles a node unless it is
    larger than one, and an instance on other hardware starts a new node."""

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
