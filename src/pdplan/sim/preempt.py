"""Preemption when KV runs out mid-generation: evict the newest request (recompute or swap)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["PreemptMixin"]


class PreemptMixin:
    """Methods of Instance that make KV room by preemption and bring swapped requests back."""

    __slots__ = ()

    def _swap_in(self: Instance, rid: int, need: int) -> bool:
        """A swapped-out request's KV comes back over PCIe; True if that kicked an idle
        instance."""
        self.swapped.discard(rid)
        pcie = self.spec.pcie_bytes_per_s * self.spec.gpus
        self.stall += need * self.sim.cfg.kv_bytes_per_token / pcie  # KV bytes / PCIe B/s
        self.ready.append(rid)
        if not self.busy:
            self.kick()
            return True
        return False

    def _make_room(self: Instance) -> None:
        """Before a step with B decodes: preempt the newest requests until B new tokens fit."""
        while self.B and self.kv_used + self.B > self.cap:
            self._preempt_newest()

    def _preempt_newest(self: Instance) -> None:
        """Evict the most recently joined running request (vLLM's victim choice)."""
        while True:
            rid = self.order.pop()
            if rid in self.running:
                break
        self._evict(rid)

    def _evict(self: Instance, rid: int) -> None:
        r, sim = self.sim.req, self.sim
        done = self.K - r.k0[rid]
        used = r.ctx0[rid] + done
        self.C -= used
        self.kv_used -= used
        self.B -= 1
        self.running.discard(rid)
        r.gen[rid] += done
        r.epoch[rid] += 1
        r.preempt[rid] += 1
        sim.preemptions += 1
        if sim.cfg.preemption == "swap":
            self.stall += (
                used * sim.cfg.kv_bytes_per_token / (self.spec.pcie_bytes_per_s * self.spec.gpus)
            )  # swap-out: KV bytes / PCIe bandwidth
            r.ctx0[rid] = used
            self.swapped.add(rid)
            self.jq.appendleft(rid)
        else:  # recompute: its prompt + generated tokens are prefilled again here
            r.todo[rid] = used
            r.pdone[rid] = 0
            self.pq.appendleft(rid)
