"""P -> D hand-off: pair a prefilled request with a decode instance, then deliver its KV.

A prefilled request with no decode instance to go to (all draining, switching or gone to
prefill, or, after a role switch, none with room in its KV pool for its prompt and output)
is parked: it keeps its KV on the prefill instance and is paired as soon as a
decode instance (re)joins (SwitchingMixin._end_switch), as prompts wait in `_unrouted` when
no prefill instance is there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.sim._hosts import InstanceHost, SimulatorHost
from pdplan.sim.kernel import PRIO_NETWORK

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance
    from pdplan.sim.state import Requests

__all__ = ["HandoffMixin"]

_PENDING = float("inf")  # Requests.not_before of a layer-wise prompt whose prefill still runs


class HandoffMixin(SimulatorHost):
    """Methods of Simulator from a finished prefill to the decode instance taking it."""

    __slots__ = ()

    def on_prefill_batch(
        self,
        inst: InstanceHost,
        batch: list[tuple[int, int, int]],
        start: float,
        end: float,
    ) -> None:
        """Layer-wise transfer: a prompt is paired as its first piece's step starts, so the KV
        of a chunked prompt's earlier chunks moves while its later chunks compute (SGLang's
        disaggregated prefill sends each chunk's KV as the chunk ends, send_kv_chunk; vLLM's
        layer-wise connectors save each layer as it is computed). Its last layer can leave
        only after its last chunk: `not_before` is that step's end, or +inf until it is known
        (on_layerwise_end)."""
        if self.cfg.transfer_mode != "layerwise" or inst.role != "prefill":
            return
        r, pre_ok = self.req, self._pre_ok
        for rid, n, done in batch:
            pre = rid in pre_ok  # decode_prealloc: its decode instance holds its KV room
            if not pre and (r.d_inst[rid] >= 0 or rid in self._parked):
                continue  # paired at an earlier chunk (or parked there: see below)
            last = n == r.todo[rid]
            r.ctx0[rid] = r.todo[rid] + done  # the whole prompt's KV, tokens
            r.not_before[rid] = end if last else _PENDING
            if last:
                self._tail[rid] = n
            if pre:  # its bytes start now, into the pre-allocated room
                self.send_prealloc(rid, inst)
                continue
            self._pair(rid, inst)
            if not last and rid in self._parked:  # no decode instance: it pairs (or parks)
                del self._parked[rid]  # when its prefill ends, as a prompt that is not
                r.not_before[rid] = 0.0  # layer-wise does

    def on_layerwise_end(self, rid: int, now: float, n: int) -> None:
        """The last chunk (n tokens) of a prompt paired at an earlier one has ended
        (PrefillMixin): its KV delivery may now be timed; if every byte already left, the
        hand-off ends now."""
        r = self.req
        if r.not_before[rid] != _PENDING:
            return
        r.not_before[rid] = now
        self._tail[rid] = n
        sent = self._sent.pop(rid, None)
        if sent is not None:
            # p is ending its step (_end_prefill decides what it does next): no kick
            self.on_transfer_done(rid, sent[0], sent[1], sent[2], False)

    def _pair(self, rid: int, p: InstanceHost, r: Requests | None = None) -> None:
        """Choose the decode instance of a prefilled request and queue it there."""
        r = r or self.req
        d = self._decode_for(rid, p, r)
        if d is None:
            self._parked[rid] = self.loop.now  # waits, holding its KV on p, for a decode one
            return
        r.d_inst[rid] = d.idx
        # its load on d: the KV it will hold at its last token (prompt + output, tokens), as
        # Dynamo's KV router weighs a decode worker by active blocks; output alone let a long
        # prompt with a short answer weigh nothing, and KV filled unevenly (preemptions)
        d.outstanding += r.inp[rid] + r.out[rid]
        d.jq.append(rid)  # Instance.offer, inlined
        d._admit_transfers()
        if d.ready:  # a swapped-out request came back in: it joins at the next boundary
            d.kick()

    def pre_pair(self, rid: int, p: Instance) -> None:
        """decode_prealloc: at arrival, rid (routed to prefill instance p) picks its decode
        instance, which queues it for KV pre-allocation; p gets the prompt once the room is
        reserved (DecodeMixin._admit_transfers), and its KV moves as its prefill ends
        (send_prealloc). SGLang's router sends each request to a (prefill, decode) pair at
        once; the decode side's DecodePreallocQueue reserves the prompt's KV, FIFO, and only
        then does the prefill side's PrefillBootstrapQueue hand it to the prefill scheduler."""
        r = self.req
        d = self._decode_for(rid, p, r)
        if d is None:  # no decode instance holds it (only mid-switch, refused with prealloc)
            p.submit_prefill(rid)  # it pairs after its prefill, as without pre-allocation
            return
        r.d_inst[rid] = d.idx
        d.outstanding += r.inp[rid] + r.out[rid]  # as _pair weighs it
        r.ctx0[rid] = r.inp[rid]  # the prompt's KV, tokens: what d reserves
        self._pre_wait.add(rid)
        d.jq.append(rid)
        d._admit_transfers()

    def send_prealloc(self, rid: int, p: InstanceHost) -> None:
        """decode_prealloc: rid's KV starts from p into the room its decode instance reserved
        (at its prefill's end, or its first chunk's start when layer-wise)."""
        self._pre_ok.discard(rid)
        r = self.req
        d = self.inst[r.d_inst[rid]]
        d._net_start(rid, p, d, d._kvb(r.ctx0[rid]))  # type: ignore[arg-type]

    def _decode_for(self, rid: int, p: InstanceHost, r: Requests) -> Instance | None:
        """The decode instance rid goes to (the pairing policy), or None if none holds it."""
        cands = self.d_cands
        # a role switch brought a small decode instance: only those with room for its prompt
        # and output in their KV (_d_fit_all: none is too small for any request, no lookups)
        if not self._d_fit_all and cands and self.d_cap_min < r.inp[rid] + r.out[rid]:
            need = r.inp[rid] + r.out[rid]
            cands = [c for c in cands if c.fit >= need]
        if not cands:
            return None
        if self._least_pair:  # Router.least, inlined
            rt = self.pairer
            s = rt._tie
            if s >= len(cands):
                s = 0
            rt._tie = s + 1
            d = cands[s]
            low = d.outstanding
            for c in cands:
                if c.outstanding < low:
                    d, low = c, c.outstanding
            return d
        return self.pairer.choose(cands, near=p)

    def _pair_parked(self) -> None:
        """A decode instance is back: pair the parked requests in the order they parked."""
        parked, inst, p_inst = self._parked, self.inst, self.req.p_inst
        parked_s, now = self._detours.parked_s, self.loop.now
        for rid in list(parked):  # each once: one too long for every decode one parks again
            if not self.d_cands:
                break
            parked_s[rid] = parked_s.get(rid, 0.0) + now - parked.pop(rid)
            self._pair(rid, inst[p_inst[rid]])

    def _unpark_from(self, p: Instance) -> int:
        """p drains for a role switch, which restarts its scheduler and KV endpoints: the KV
        it holds for parked requests is given up and they are prefilled again elsewhere (a
        recompute preemption). Waiting for a decode instance instead could deadlock: the
        instance that would become one may be p itself, which cannot switch holding KV.
        Returns how many requests gave up their KV."""
        r, p_inst, det, now = self.req, self.req.p_inst, self._detours, self.loop.now
        mine = [x for x in self._parked if p_inst[x] == p.idx]
        for rid in mine:
            del self._parked[rid]
            came = det.restart.get(rid, r.arrival[rid])  # s, it queued on p from then
            det.elsewhere.append((p.idx, r.pf_start[rid] - came, r.pf_end[rid] - r.pf_start[rid]))
            det.restart[rid], r.pf_start[rid] = now, float("nan")  # its next prefill is anew
            p.kv_used -= r.ctx0[rid] + (p.seq_fixed(rid) if p.wins else p.st)  # KV, state
            r.todo[rid], r.pdone[rid], r.hit[rid] = r.inp[rid], 0, 0
            r.not_before[rid] = 0.0
            r.preempt[rid] += 1
            self.preemptions += 1
            if self.p_cands:
                self._route(rid)
            else:
                self._unrouted.append(rid)
        return len(mine)

    def on_transfer_done(
        self, rid: int, p: Instance, d: Instance, t_bytes: float, kick: bool = True
    ) -> None:
        """The transfer's last byte left at t_bytes; now = t_bytes + link latency (or, for a
        layer-wise prompt whose bytes left first, its prefill's end: on_layerwise_end)."""
        r, now = self.req, self.loop.now
        if r.not_before[rid] == _PENDING:  # chunked, layer-wise: its prefill still runs and
            self._sent[rid] = (p, d, t_bytes)  # holds the KV on p; on_layerwise_end goes on
            return
        # p frees its KV, its recurrent state and its window layers' KV
        p.kv_used -= r.ctx0[rid] + (p.seq_fixed(rid) if p.wins else p.st)
        if kick and (p.pq or p.draining) and (p.in_run or not p.busy):
            p.kick()  # (a busy prefill step takes the new work at its end anyway)
        nb = r.not_before[rid]  # layer-wise: prefill end; 0 otherwise
        t = now
        if nb:  # the last layer's KV of the last step's tokens leaves after that step ends
            tail = self._tail.pop(rid, r.ctx0[rid])  # (earlier chunks' and cached tokens'
            last = self.cfg.kv_bytes(tail) / self.cfg.kv_layers  # KV left before): one layer, B
            # over the transfer's own path (NVLink inside a node) and senders, B / (B/s)
            _, _, rate, lat = self.net.path(p, d)  # its lone rate, B/s, and latency, s
            end = nb + last / rate
            if end > t_bytes:
                t = end + lat
        else:
            nb = r.pf_end[rid]
        s = r.xfer_start[rid]  # admitted by d then; before, it waited for a decode slot
        r.xfer_s[rid] = t - (s if s > nb else nb)  # on the wire after prefill and admission
        t += self.cfg.handoff_s  # PD hand-off: proxy, connector notice, decode-side poll
        if t > now:
            self.loop.schedule(t, PRIO_NETWORK, d.deliver, rid)
        else:
            d.deliver(rid)
