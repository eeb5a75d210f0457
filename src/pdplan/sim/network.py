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
    `active` is an insertion-ordered dict (deterministic iteration, unlike a set); `moved`:
    bytes of the transfers started on it, B (its utilisation: moved / (bw x run time));
    `share`: bw / len(active), kept up to date whenever transfers join it or leave it with
    some left (so resharing reads one attribute per link instead of dividing again)."""

    __slots__ = ("active", "bw", "moved", "name", "share")

    def __init__(self, name: str, bw: float) -> None:
        self.name, self.bw, self.moved = name, bw, 0.0
        self.active: dict[Transfer, None] = {}
        self.share = bw


class Transfer:
    """One request's KV moving from a prefill to a decode instance. `t_end`: when its last
    byte leaves at the current rate, s; `done`: t_end + lat, when it completes (one link
    latency later), kept beside t_end for the scans of the earliest completion. `cap`: the most
    its own sending / receiving GPUs move, B/s (Network.lone_rate); `lat`: its path's one-way
    latency, s (NVLink inside a node, NICs between nodes)."""

    __slots__ = tuple("cap done dst l0 l1 last lat left rate rid src t_end".split())

    def __init__(
        self,
        rid: int,
        src: Instance,
        dst: Instance,
        nbytes: float,
        now: float,
        path: tuple[Link, Link, float, float],
    ) -> None:
        self.rid, self.src, self.dst = rid, src, dst
        self.left, self.last = nbytes, now
        self.l0, self.l1, self.cap, self.lat = path
        self.rate = 0.0
        self.t_end = self.done = _INF


class Network:
    """Each instance has NIC egress/ingress links (gpus x per-GPU NIC B/s) and NVLink
    egress/ingress links (gpus x per-GPU NVLink B/s): different requests' KV can leave from
    different ranks. A P->D transfer inside one node uses NVLink, otherwise the NICs. One
    request's KV leaves only from the GPUs that hold a distinct shard of it (InstanceSpec.
    senders: KV heads split over min(TP, n_kv) ranks, one rank per stage for an MLA latent;
    perf.kv_transfer.kv_shards) and lands on the receiver's, so its rate is capped at
    cap = min(senders_src x per-GPU B/s of src, senders_dst x per-GPU B/s of dst) on that path,
    as `pdplan kv` times it. A transfer's rate is min(cap, min over its links of bw / (active
    transfers on that link)): an equal-share approximation of max-min fairness; the share a
    capped transfer leaves unused is not handed to the others on its links.

    One event is armed for the whole network, at the earliest completion (last byte + its
    path's latency: SimConfig.nvlink_latency_s inside a node, link_latency_s between nodes);
    rate changes only move it. During its latency a finished transfer still counts on its
    links (an error of at most one latency, ~10-20 us, on the shares of transfers
    overlapping it). While held (a prefill batch handing off several prompts at one instant,
    or completions being processed) starts are reshared once, at flush()."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._links: dict[tuple[str, int], Link] = {}
        # [src][dst] -> egress link, ingress link, cap B/s, latency s (None until first used):
        # nested lists, as two list indexings cost less than a tuple key's hash and lookup
        n = len(sim.cfg.instances)
        self._pairs: list[list[tuple[Link, Link, float, float] | None]] = [
            [None] * n for _ in range(n)
        ]
        self.transfers: dict[Transfer, None] = {}
        self._held = 0
        self._dirty: dict[Link, None] = {}
        self._armed, self._ver = _INF, 0
        self._changed = False  # transfers started or finished since the last _arm
        self._heap, self._seq, self._fire_cb = sim.loop.heap, sim.loop.seq, self._fire

    @property
    def active(self) -> int:
        return len(self.transfers)

    def path(self, src: Instance, dst: Instance) -> tuple[Link, Link, float, float]:
        """(egress link, ingress link, cap B/s, latency s) of a src -> dst transfer: NVLink
        inside one node, NICs otherwise; cap = what the two ends' KV-carrying GPUs move at most
        (the rate of the transfer alone on its links)."""
        pair = self._pairs[src.idx][dst.idx]
        if pair is None:
            a, b = src.spec, dst.spec
            if a.node == b.node:
                l0, l1 = self._link("nvl_out", src), self._link("nvl_in", dst)
                cap = min(a.senders * a.nvlink_bytes_per_s, b.senders * b.nvlink_bytes_per_s)
                lat = self.sim.cfg.nvlink_latency_s
            else:
                l0, l1 = self._link("nic_out", src), self._link("nic_in", dst)
                cap = min(a.senders * a.nic_bytes_per_s, b.senders * b.nic_bytes_per_s)
                lat = self.sim.cfg.link_latency_s
            # senders <= gpus, so cap <= both links' bw already; min() keeps that true anyway
            pair = self._pairs[src.idx][dst.idx] = (l0, l1, min(cap, l0.bw, l1.bw), lat)
        return pair

    def utilisation(self, idx: int, total_s: float) -> float:
        """Busiest of instance idx's KV links (NIC / NVLink, in / out): bytes moved over
        bytes it could move in total_s seconds; 0 where none carried KV."""
        best = 0.0
        for kind in ("nic_out", "nic_in", "nvl_out", "nvl_in"):
            link = self._links.get((kind, idx))
            if link is not None and total_s > 0:
                best = max(best, link.moved / (link.bw * total_s))
        return best

    def lone_rate(self, src: Instance, dst: Instance) -> float:
        """B/s of a src -> dst transfer alone on its links: its cap (path()), B/s."""
        return self.path(src, dst)[2]

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
        pair = self._pairs[src.idx][dst.idx] or self.path(src, dst)
        tr = _new(Transfer)  # Transfer(rid, src, dst, nbytes, now, pair) without __init__
        tr.rid, tr.src, tr.dst, tr.left, tr.last = rid, src, dst, nbytes, now
        tr.l0, tr.l1, tr.cap, tr.lat = l0, l1, cap, lat = pair
        l0.moved += nbytes
        l1.moved += nbytes
        self.transfers[tr] = None
        if not l0.active and not l1.active:  # fast path: idle links, nobody else's rate moves
            tr.rate = cap  # alone on both links: its cap (<= either link's bw)
            t_end = tr.t_end = now + nbytes / cap
            t = tr.done = t_end + lat
            l0.active[tr] = l1.active[tr] = None
            l0.share, l1.share = l0.bw / 1, l1.bw / 1  # bw / len(active)
            if self._held:
                self._changed = True
                return
            if t < self._armed:  # _arm, inlined: the new transfer is the earliest
                self._armed = t
                self._ver += 1
                heappush(self._heap, (t, PRIO_NETWORK, next(self._seq), self._fire_cb, self._ver))
            return
        tr.rate, tr.t_end, tr.done = 0.0, _INF, _INF
        l0.active[tr] = l1.active[tr] = None
        l0.share, l1.share = l0.bw / len(l0.active), l1.bw / len(l1.active)
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
            if tr.done < t:
                t = tr.done
        if t != self._armed and t < _INF:  # t >= now: a transfer ends now or later
            self._armed = t
            self._ver += 1
            heappush(self._heap, (t, PRIO_NETWORK, next(self._seq), self._fire_cb, self._ver))

    def _fire(self, ver: int) -> None:
        if ver != self._ver:
            return
        now = self.sim.loop.now
        self._armed = _INF
        transfers = self.transfers
        self._held += 1  # deliveries may start transfers: reshare and re-arm once, below
        if len(transfers) == 1:  # the usual lone transfer: no scan, no list of the done
            (tr,) = transfers
            if tr.done <= now:
                transfers.clear()
                del tr.l0.active[tr]  # its links carry only it: none left to reshare
                del tr.l1.active[tr]
                self.sim.on_transfer_done(tr.rid, tr.src, tr.dst, tr.t_end)
        else:
            self._complete(now)
        self._held -= 1  # flush(), inlined (nothing else holds during an event)
        dirty = self._dirty
        if dirty:
            for link in dirty:
                _settle_reshare(link, now)
            dirty.clear()
        if transfers:
            self._arm()
        else:
            self._changed = False  # _arm of an idle network: nothing to schedule

    def _complete(self, now: float) -> None:
        """Let every transfer done by `now` go (in start order); its links are reshared."""
        transfers, dirty = self.transfers, self._dirty
        done = []
        for tr in transfers:  # a plain loop: a comprehension is a function call of its own
            if tr.done <= now:
                done.append(tr)
        for tr in done:
            del transfers[tr]
            a, b = tr.l0, tr.l1
            del a.active[tr]
            del b.active[tr]
            if a.active:
                dirty[a] = None
                a.share = a.bw / len(a.active)
            if b.active:
                dirty[b] = None
                b.share = b.bw / len(b.active)
        on_done = self.sim.on_transfer_done
        for tr in done:
            on_done(tr.rid, tr.src, tr.dst, tr.t_end)


def _settle_reshare(link: Link, now: float) -> None:
    """Bring the remaining bytes of link's transfers up to `now`, then recompute their rates
    (min over each transfer's two links of bw / active transfers, equal shares, and its cap)."""
    # one pass: a transfer's new rate depends on link sizes (Link.share), not on others
    for tr in link.active:
        left = tr.left = tr.left - tr.rate * (now - tr.last)
        tr.last = now
        if tr.t_end <= now:
            continue  # last byte sent; only its latency is left
        rate = tr.l0.share
        r1 = tr.l1.share
        if r1 < rate:
            rate = r1
        if tr.cap < rate:
            rate = tr.cap
        if rate == tr.rate:
            continue
        tr.rate = rate
        t_end = tr.t_end = now + (left if left > 0.0 else 0.0) / rate
        tr.done = t_end + tr.lat
