"""Prefill steps of an instance: taking prompt pieces into a step, prefill-only steps, and what
a finished chunk does (first token, hand-off to a decode instance, or joining the batch)."""

from __future__ import annotations

from heapq import heappush

from pdplan.perf.step import BatchShape
from pdplan.sim._hosts import InstanceHost
from pdplan.sim.kernel import PRIO_BOUNDARY

__all__ = ["PrefillMixin"]


class PrefillMixin(InstanceHost):
    """Methods of Instance for prompt work (every role: a decode instance recomputes too)."""

    __slots__ = ()

    def _take_prompts(self, budget: int, chunk: bool, max_seqs: int) -> list[tuple[int, int, int]]:
        """Prompt pieces for one step: [(rid, new_tokens, cached_tokens)] within `budget`.
        A prompt reserves its KV (and its prefill starts) when it first enters a step."""
        r = self.sim.req
        todo_a, pdone_a, started, role = r.todo, r.pdone, self._started, self.role
        batch: list[tuple[int, int, int]] = []
        left = budget
        for rid in self.pq:
            if left <= 0 or len(batch) >= max_seqs:
                break
            todo, done = todo_a[rid], pdone_a[rid]
            if chunk:
                take = todo if todo < left else left
            elif batch and todo > left:
                break
            else:
                take = todo
            if rid not in started:
                if self.B + self.prefilling >= self.spec.max_batch:
                    break
                st = self.seq_fixed(rid) if self.wins else self.st  # state, window layers
                held = todo + done + st  # its KV and its recurrent state, tokens
                if self.kv_used + held + self.B + (role != "prefill") > self.cap:
                    break  # + its next token, unless its KV leaves for a decode instance
                if self.kv_full >= 0:  # kv_reserve_output: its whole output must fit too
                    full = r.inp[rid] + r.out[rid] + st
                    if self.kv_full + full > self.cap:
                        break
                    self.kv_full += full
                self.kv_used += held
                started.add(rid)
                self.prefilling += 1
                ps = r.pf_start[rid]
                if ps != ps:  # NaN: its first chunk starts now
                    r.pf_start[rid] = self.tK
            batch.append((rid, take, done))
            left -= take
        return batch

    def _prefill_step(self, chunk_budget: int | None) -> None:
        """A prefill-only step (prefill role, prefill-first agg, or a recompute on decode)."""
        spec = self.spec
        if not self.pq:
            if self.B:
                self._start_run()
            return
        # prompts fill the step's token budget and the last is cut to fit (SGLang's chunked
        # prefill, vLLM / TensorRT-LLM's token budget on a prefill instance)
        budget = chunk_budget if chunk_budget is not None else spec.prefill_token_budget
        batch = self._take_prompts(budget, True, spec.max_batch)
        if not batch:
            if self.B:
                self._start_run()
            return
        toks = pairs = 0.0
        for _, n, c in batch:
            toks += n
            pairs += n * c + n * (n + 1) * 0.5  # causal_pairs(n, c), inlined
        key = (toks, pairs, len(batch))
        dur = self._pf_cache.get(key)
        if dur is None:
            dur = self._prefill_time(key)
        now = self.tK
        if self.B:
            self.stall += dur  # prefill-first: running decodes wait for this step
        self.busy, self.in_run = True, False  # _begin, inlined
        if self.tracer is not None:
            self.tracer.append((self.idx, "prefill", now, dur, int(toks), self.B))
        if self.layerwise:
            self.sim.on_prefill_batch(self, batch, now, now + dur)
        heappush(self.heap, (now + dur, PRIO_BOUNDARY, next(self.seq), self._end_pf_cb, batch))

    def _prefill_time(self, key: tuple[float, float, int]) -> float:
        """Step time of a pure prefill step, memoised per (tokens, pairs, seqs)."""
        if len(self._pf_cache) >= 1 << 16:
            self._pf_cache.clear()  # bound memory on long runs
        shape = BatchShape(int(key[0]), key[1], key[2])
        dur = self._pf_cache[key] = self.model.step_time(shape)
        return dur

    def _end_prefill(self, batch: list[tuple[int, int, int]]) -> None:
        now = self.sim.loop.now
        self.busy = False
        if self.gate is None:
            self.poll_K = self.K  # a prefill step makes the scheduler poll at once
        self.busy_s += now - self.tK
        self.tK = now
        if len(batch) > 1:
            net = self.sim.net
            net.hold()  # KV of all prompts of the batch starts moving at once: reshare once
            self._finish_chunks(batch, now)
            net.flush()
        else:
            self._finish_chunks(batch, now)
        if (  # _decide, short-cut for a plain prefill instance (an inbox needs _take_in)
            self.role == "prefill"
            and not (self.jq or self.ready or self.B or self.draining or self.inbox)
        ):
            if self.pq:
                self._prefill_step(self.spec.chunk_budget)
            if not self.busy:
                self.in_run = False
        else:
            self._decide()

    def _finish_chunks(self, batch: list[tuple[int, int, int]], now: float) -> None:
        r, sim, pq = self.sim.req, self.sim, self.pq
        todo, pdone, gen = r.todo, r.pdone, r.gen
        for rid, n, _ in batch:
            left = todo[rid] = todo[rid] - n
            done = pdone[rid] = pdone[rid] + n
            if left:
                if self.ckpt and sim._hashes and self.role != "decode":
                    self._cache_blocks(rid, done, False)  # hybrid: a state at each chunk's end
                continue
            if pq[0] == rid:
                pq.popleft()
            else:
                pq.remove(rid)
            self._started.discard(rid)
            self.prefilling -= 1
            r.ctx0[rid] = done
            if self.cache is not None and sim._hashes and self.role != "decode":
                self._cache_blocks(rid, done, True)
            if gen[rid] == 0 and self.role != "decode":  # the prompt's own prefill, not a
                r.pf_end[rid] = now  # recompute (after a token, or on the decode side)
            if self.role == "prefill":  # prefill done: pair it with a decode instance
                self.outstanding -= r.inp[rid]
                if r.d_inst[rid] < 0:
                    sim._pair(rid, self, r)
                elif self.layerwise:  # paired at its first chunk (HandoffMixin)
                    sim.on_layerwise_end(rid, now, n)
                elif rid in sim._pre_ok:  # its decode instance reserved its KV room
                    sim.send_prealloc(rid, self)
                continue
            if gen[rid] == 0:  # aggregated (or a decode-side recompute before its first
                gen[rid] = 1  # token): the prefill step emits the first token
                r.first[rid] = now
                if sim._evicted:  # its next gap runs from this token, not the eviction
                    sim._evicted.pop(rid, None)
            else:  # a recompute after a token (only those come here with one): it samples
                self._recomputed(rid, now)  # the next (PreemptMixin._queue_recompute)
            if gen[rid] >= r.out[rid]:  # done at its prefill (one token out, or a recompute's last)
                st = self.seq_fixed(rid) if self.wins else self.st
                self.kv_used -= done + st
                if self.kv_full >= 0:  # its reservation (kv_reserve_output) is free again
                    self.kv_full -= r.inp[rid] + r.out[rid] + st
                sim.on_finish(rid, self, now)
            else:
                self.ready.append(rid)

    def _cache_blocks(self, rid: int, done: int, last: bool) -> None:
        """Put a prompt's computed blocks in the prefix cache once `done` of its tokens are
        prefilled. Blocks are reusable once computed (vLLM APC, SGLang radix cache); a chunked
        prompt's go in at its last chunk, except on a hybrid model, where each chunk's end
        also saves the recurrent state a later hit resumes from (SGLang caches an unfinished
        chunked request with its mamba state, MambaRadixCache.cache_unfinished_req). A
        state is saved at the prefill's end on the block grid (done // block tokens full
        blocks); a recompute past the prompt (output tokens too) saves none within it."""
        cache, wl = self.cache, self.sim.wl
        assert cache is not None  # callers test it
        hashes = wl.hashes(rid).tolist()
        k = done // wl.block_tokens
        if not last:
            hashes = hashes[:k]  # only whole blocks are computed so far
        if cache.state_blocks and done <= self.sim.req.inp[rid]:
            cache.insert(hashes, (k,))
        else:
            cache.insert(hashes)
