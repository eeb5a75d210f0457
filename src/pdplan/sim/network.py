"""KV-cache transfer network: per-instance NIC / NVLink links shared fairly by transfers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.sim.kernel import PRIO_NETWORK

if TYPE_CHECKING:
    from pdplan.sim.cluster import Simulator
    from pdplan.sim.engine import Instance

__all__ = ["Link", "Network", "Transfer"]


class Link:
    """A one-direction link of `bw` bytes/s; each of its n active transfers gets bw / n."""

    __slots__ = ("active", "bw", "name")

    def __init__(self, name: str, bw: float) -> None:
        self.name, self.bw = name, bw
        self.active: set[Transfer] = set()


class Transfer:
    """One request's KV moving from a prefill to a decode instance."""

    __slots__ = ("dst", "last", "left", "links", "rate", "rid", "src", "start", "ver")

    def __init__(
        self,
        rid: int,
        src: Instance,
        dst: Instance,
        nbytes: float,
        now: float,
        links: tuple[Link, ...],
    ) -> None:
        self.rid, self.src, self.dst = rid, src, dst
        self.left, self.last, self.start = nbytes, now, now
        self.links = links
        self.rate = 0.0
        self.ver = 0


class Network:
    """Each instance has NIC egress/ingress links (gpus x per-GPU NIC B/s) and NVLink
    egress/ingress links (gpus x per-GPU NVLink B/s). A P->D transfer inside one node uses
    NVLink, otherwise the NICs. A transfer's rate is min over its links of bw / (active
    transfers on that link): an equal-share approximation of max-min fairness."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._links: dict[tuple[str, int], Link] = {}
        self.active = 0

    def _link(self, kind: str, inst: Instance) -> Link:
        key = (kind, inst.idx)
        link = self._links.get(key)
        if link is None:
            s = inst.spec
            per_gpu = s.nvlink_bytes_per_s if kind.startswith("nvl") else s.nic_bytes_per_s
            link = self._links[key] = Link(f"{kind}{inst.idx}", per_gpu * s.gpus)
        return link

    def start(self, rid: int, src: Instance, dst: Instance, nbytes: float) -> None:
        """Begin moving nbytes of KV from src to dst now."""
        now = self.sim.loop.now
        local = src.spec.node == dst.spec.node
        kinds = ("nvl_out", "nvl_in") if local else ("nic_out", "nic_in")
        links = (self._link(kinds[0], src), self._link(kinds[1], dst))
        tr = Transfer(rid, src, dst, nbytes, now, links)
        self.active += 1
        for link in links:
            self._settle(link, now)
            link.active.add(tr)
        for link in links:
            self._reshare(link, now)

    def _settle(self, link: Link, now: float) -> None:
        """Bring the remaining bytes of every transfer on link up to `now`."""
        for tr in link.active:
            tr.left -= tr.rate * (now - tr.last)
            tr.last = now

    def _reshare(self, link: Link, now: float) -> None:
        """Recompute rates of the transfers on link and reschedule their completions."""
        sched = self.sim.loop.schedule
        for tr in link.active:
            rate = min(lk.bw / len(lk.active) for lk in tr.links)
            if rate == tr.rate:
                continue
            tr.left -= tr.rate * (now - tr.last)
            tr.last = now
            tr.rate = rate
            tr.ver += 1
            sched(now + max(tr.left, 0.0) / rate, PRIO_NETWORK, self._done, (tr, tr.ver))

    def _done(self, arg: tuple[Transfer, int]) -> None:
        tr, ver = arg
        if ver != tr.ver:
            return
        now = self.sim.loop.now
        self.active -= 1
        for link in tr.links:
            self._settle(link, now)
            link.active.discard(tr)
        for link in tr.links:
            self._reshare(link, now)
        self.sim.on_transfer_done(tr.rid, tr.src, tr.dst, tr.start)
