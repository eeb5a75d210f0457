"""KV-cache transfer network: per-instance NIC / NVLink links shared fairly by transfers."""

from __future__ import annotations

from heapq import heappush
from typing import TYPE_CHECKING

from pdplan.sim.kernel import PRIO_NETWORK

if TYPE_CHECKING:
    from pdplan.sim.cluster import Simulator
    from pdplan.sim.engine import Instance

__all__ = ["Link", "Network", "Transfer"]

_INF = float("inf")
_new = object.__new__


class Link:
    """A one-direction link of `bw` bytes/s; each of its n active transfers gets bw / n.
    `active` is an insertion-ordered dict (deterministic iteration, unlike a set)."""

    __slots__ = ("active", "bw", "name")

    def __init__(self, name: str, bw: float) -> None:
        self.name, self.bw = name, bw
        self.active: dict[Transfer, None] = {}


class Transfer:
    """One request's KV moving from a prefill to a decode instance. `t_end`: when its last
    byte leaves at the current rate, s (it completes one link latency later)."""

    __slots__ = ("dst", "l0", "l1", "last", "left", "rate", "rid", "src", "t_end")

    def __init__(
        self, rid: int, src: Instance, dst: Instance, nbytes: float, now: float, l0: Link, l1: Link
    ) -> None:
        self.rid, self.src, self.dst = rid, src, dst
        self.left, self.last = nbytes, now
        self.l0, self.l1 = l0, l1
        self.rate = 0.0
        self.t_end = _INF


class Network:
    """Each instance has NIC egress/ingress links (gpus x per-GPU NIC B/s) and NVLink
    egress/ingress links (gpus x per-GPU NVLink B/s). A P->D transfer inside one node uses
    NVLink, otherwise the NICs. A transfer's rate is min over its links of bw / (active
    transfers on that link): an equal-share approximation of max-min fairness.

    One event is armed for the whole network, at the earliest completion (last byte + link
    latency); rate changes only move it. During its latency a finished transfer still counts
    on its links (an error of at most one latency, ~10 us, on the shares of transfers
    overlapping it). While held (a prefill batch handing off several prompts at one instant,
    or completions being processed) starts are reshared once, at flush()."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._links: dict[tuple[str, int], Link] = {}
        self._pairs: dict[tuple[int, int], tuple[Link, Link]] = {}  # (src, dst) -> links
        self.transfers: dict[Transfer, None] = {}
        self.latency = sim.cfg.link_latency_s
        self._held = 0
        self._dirty: dict[Link, None] = {}
        self._armed, self._ver = _INF, 0
        self._changed = False  # transfers started or finished since the last _arm
        self._heap, self._seq, self._fire_cb = sim.loop.heap, sim.loop.seq, self._fire

    @property
    def active(self) -> int:
        return len(self.transfers)

    def _link(self, kind: str, inst: Instance) -> Link:
        key = (kind, inst.idx)
        link = self._links.get(key)
        if link is None:
            s = inst.spec
            per_gpu = s.nvlink_bytes_per_s if kind.startswith("nvl") else s.nic_bytes_per_s
            link = self._links[key] = Link(f"{kind}{inst.idx}", per_gpu * s.gpus)
        return link

    def hold(self) -> None:
        """Defer resharing and re-arming until the matching flush()."""
        self._held += 1

    def flush(self) -> None:
        self._held -= 1
        if not self._held:
            if self._dirty:
                now = self.sim.loop.now
                for link in self._dirty:
                    _settle_reshare(link, now)
                self._dirty.clear()
            if self._changed:
                self._arm()

    def start(self, rid: int, src: Instance, dst: Instance, nbytes: float) -> None:
        """Begin moving nbytes of KV from src to dst now."""
        now = self.sim.loop.now
        key = (src.idx, dst.idx)
        pair = self._pairs.get(key)
        if pair is None:
            if src.spec.node == dst.spec.node:
                pair = self._link("nvl_out", src), self._link("nvl_in", dst)
            else:
                pair = self._link("nic_out", src), self._link("nic_in", dst)
            self._pairs[key] = pair
        l0, l1 = pair
        tr = _new(Transfer)  # Transfer(rid, src, dst, nbytes, now, l0, l1) without __init__
        tr.rid, tr.src, tr.dst, tr.left, tr.last, tr.l0, tr.l1 = rid, src, dst, nbytes, now, l0, l1
        self.transfers[tr] = None
        if not l0.active and not l1.active:  # fast path: idle links, nobody else's rate moves
            tr.rate = rate = l0.bw if l0.bw < l1.bw else l1.bw
            tr.t_end = now + nbytes / rate
            l0.active[tr] = l1.active[tr] = None
            if self._held:
                self._changed = True
                return
            t = tr.t_end + self.latency
            if t < self._armed:  # _arm, inlined: the new transfer is the earliest
                self._armed = t
                self._ver += 1
                heappush(self._heap, (t, PRIO_NETWORK, next(self._seq), self._fire_cb, self._ver))
            return
        tr.rate, tr.t_end = 0.0, _INF
        l0.active[tr] = l1.active[tr] = None
        if self._held:
            self._dirty[l0] = self._dirty[l1] = None
            self._changed = True
            return
        _settle_reshare(l0, now)
        _settle_reshare(l1, now)
        self._arm()

    def _arm(self) -> None:
        """(Re)schedule the network's one event at the earliest completion."""
        self._changed = False
        t = _INF
        for tr in self.transfers:
            if tr.t_end < t:
                t = tr.t_end
        t += self.latency
        if t != self._armed and t < _INF:  # t >= now: a transfer ends now or later
            self._armed = t
            self._ver += 1
            heappush(self._heap, (t, PRIO_NETWORK, next(self._seq), self._fire_cb, self._ver))

    def _fire(self, ver: int) -> None:
        if ver != self._ver:
            return
        now, lat = self.sim.loop.now, self.latency
        self._armed = _INF
        transfers = self.transfers
        if len(transfers) == 1:  # the usual lone transfer: no scan
            done = list(transfers)
            if done[0].t_end + lat > now:
                done = []
        else:
            done = [tr for tr in transfers if tr.t_end + lat <= now]
        self._held += 1  # deliveries may start transfers: reshare and re-arm once, below
        dirty = self._dirty
        for tr in done:
            del transfers[tr]
            a, b = tr.l0, tr.l1
            del a.active[tr]
            del b.active[tr]
            if a.active:
                dirty[a] = None
            if b.active:
                dirty[b] = None
        on_done = self.sim.on_transfer_done
        for tr in done:
            on_done(tr.rid, tr.src, tr.dst, tr.t_end)
        self._held -= 1  # flush(), inlined (nothing else holds during an event)
        if dirty:
            for link in dirty:
                _settle_reshare(link, now)
            dirty.clear()
        if transfers:
            self._arm()
        else:
            self._changed = False  # _arm of an idle network: nothing to schedule


def _settle_reshare(link: Link, now: float) -> None:
    """Bring the remaining bytes of link's transfers up to `now`, then recompute their rates
    (min over each transfer's two links of bw / active transfers; equal shares)."""
    active = link.active
    if not active:
        return
    share = link.bw / len(active)  # this link's share, the same for each of its transfers
    for tr in active:  # one pass: a transfer's new rate depends on link sizes, not on others
        left = tr.left = tr.left - tr.rate * (now - tr.last)
        tr.last = now
        if tr.t_end <= now:
            continue  # last byte sent; only its latency is left
        a, b = tr.l0, tr.l1
        rate = share if a is link else a.bw / len(a.active)
        r1 = share if b is link else b.bw / len(b.active)
        if r1 < rate:
            rate = r1
        if rate == tr.rate:
            continue
        tr.rate = rate
        tr.t_end = now + (left if left > 0.0 else 0.0) / rate
