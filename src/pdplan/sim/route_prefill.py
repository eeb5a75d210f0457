"""Which prefill (or aggregated) instance takes an arriving request: router, fit, prefix hit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.sim._hosts import SimulatorHost

if TYPE_CHECKING:
    from pdplan.sim.engine import Instance

__all__ = ["PrefillRouteMixin"]


class PrefillRouteMixin(SimulatorHost):
    """Simulator._route (the general path; Simulator._enter inlines plain least-loaded
    routing) and the fallback to an instance whose KV pool holds the prompt."""

    __slots__ = ()

    def _route(self, rid: int) -> None:
        r = self.req
        inp = r.inp[rid]
        inst: Instance | None  # None: _fitting found none
        if self._hashes:
            hashes = self.wl.hashes(rid).tolist()
            inst = self.router.choose(self.p_cands, hashes)
        elif self._least_route:
            hashes, inst = (), self.router.least(self.p_cands)
        else:
            hashes, inst = (), self.router.choose(self.p_cands)
        need = inp + (r.out[rid] if inst.role == "agg" else 0)  # tokens: agg decodes it too
        if need > inst.fit:  # too long for it: the least loaded of those it fits, if any
            inst = self._fitting(self.p_cands, need)
            if inst is None:
                return self._drop(rid, "prompt exceeds every prefill instance's KV capacity")
        r.p_inst[rid] = inst.idx
        hit = 0
        if hashes and inst.cache is not None:
            if inst.cache.state_blocks:  # hybrid: at least its last token is computed, so it
                # resumes from a state saved before it (SGLang matches len - 1 tokens at most)
                hashes = hashes[: (inp - 1) // self.wl.block_tokens]
            blocks = inst.cache.lookup(hashes)
            hit = min(blocks * self.wl.block_tokens, inp - 1)  # tokens; its blocks go into
            # the cache when its prefill is done (Instance._finish_chunks)
            r.hit[rid] = r.pdone[rid] = hit
        r.todo[rid] = inp - hit
        inst.outstanding += inp + (r.out[rid] if inst.role == "agg" else 0)
        if self._prealloc_on:  # its decode instance reserves its KV before it is prefilled
            self.pre_pair(rid, inst)
        else:
            inst.submit_prefill(rid)
        return None

    @staticmethod
    def _fitting(cands: list[Instance], tokens: int) -> Instance | None:
        """The least loaded candidate whose KV pool holds `tokens`, or None (pools differ in
        size when instances do, e.g. on different GPUs)."""
        fit = [c for c in cands if c.fit >= tokens]
        return min(fit, key=lambda c: (c.outstanding, c.idx)) if fit else None
