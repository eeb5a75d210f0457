"""A hybrid model's prefix hit ends where a recurrent state was saved, and saved states cost."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.sim.cache import PrefixCache
from pdplan.workload.core import Workload

from .helpers import shared_block_pair

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # prefill of n tokens: 0.01 + n ms
ST = 3000  # tokens: one sequence's recurrent state in KV-pool tokens (hybrid model)


def _hits(wl: Workload, state: int, **kw: object) -> list[int]:
    inst = InstanceSpec("agg", STEP, prefix_cache_blocks=1000, kv_state_tokens=state, **kw)  # type: ignore[arg-type]
    res = simulate(SimConfig(instances=(inst,), routing="prefix"), wl)
    assert res.summary()["finished"] == len(wl)
    return [int(h) for h in res.columns["hit"]]


def _wl(prompts: list[list[int]], lengths: list[int]) -> Workload:
    """One request per prompt (hash ids of 512-token blocks), 10 s apart, 2 tokens out."""
    n = len(prompts)
    return Workload(
        np.array(lengths, np.int32),
        np.full(n, 2, np.int32),
        np.arange(n) * 10.0,
        hash_offsets=np.cumsum([0] + [len(p) for p in prompts]),
        hash_ids=np.array([h for p in prompts for h in p]),
        block_tokens=512,
    )


def test_shared_head_without_a_state_gives_no_hit() -> None:
    """Prompts [7, 8] and [7, 9] share block 7, but no prefill ended there: attention layers
    reuse it (512 tokens), a hybrid model's recurrent layers cannot resume mid-prompt."""
    assert _hits(shared_block_pair(), 0) == [0, 512]
    assert _hits(shared_block_pair(), ST) == [0, 0]


def test_a_continuation_resumes_from_the_prompt_end() -> None:
    """Turn 2 = turn 1's two whole blocks + one more: the state saved at turn 1's end lets
    the hybrid model skip 1,024 tokens, as attention does."""
    wl = _wl([[7, 8], [7, 8, 9]], [1024, 1536])
    assert _hits(wl, ST) == [0, 1024] == _hits(wl, 0)


def test_an_unaligned_prompt_end_rounds_down_to_its_whole_blocks() -> None:
    """Turn 1 has 1,300 tokens (blocks 7, 8 whole, 10 partial): its state is placed after
    its two whole blocks, so turn 2 (7, 8, 11) resumes after 1,024 tokens."""
    wl = _wl([[7, 8, 10], [7, 8, 11]], [1300, 1536])
    assert _hits(wl, ST) == [0, 1024]


def test_chunk_ends_save_states() -> None:
    """A 2,048-token prompt prefilled in 1,024-token chunks (vLLM-style mixed budget) saves
    a state after its first two blocks; a second prompt parting after them hits 1,024
    tokens. Unchunked, the only state is at the prompt's end: no hit."""
    wl = _wl([[1, 2, 3, 4], [1, 2, 5, 6]], [2048, 2048])
    assert _hits(wl, ST, chunk_budget=1024) == [0, 1024]
    assert _hits(wl, ST, chunk_budget=4096) == [0, 0]
    assert _hits(wl, 0, chunk_budget=4096) == [0, 1024]


def test_cache_match_stops_at_the_deepest_state() -> None:
    hybrid, plain = PrefixCache(100, state_blocks=2.0), PrefixCache(100)
    for c in (hybrid, plain):
        c.insert([1, 2, 3, 4], (4,))
        c.insert([1, 2, 5], (2, 3))
    assert plain.match([1, 2, 3, 9]) == 3 and hybrid.match([1, 2, 3, 9]) == 2
    assert hybrid.match([1, 2, 3, 4, 9]) == 4 and hybrid.match([1, 9]) == 0
    assert hybrid.states == 3 and plain.states == 0


def test_saved_states_take_capacity_and_leave_with_their_block() -> None:
    """10 blocks; each state costs 3. Two 4-block prompts with a state each need 8 + 6 = 14:
    the least recent block (the first prompt's tail, 4) goes, and its state with it, which
    leaves the first prompt no hit at all, where attention would keep 3 blocks."""
    c = PrefixCache(10, state_blocks=3.0)
    c.insert([1, 2, 3, 4], (4,))
    c.insert([5, 6, 7, 8], (4,))
    assert len(c) == 7 and c.states == 1
    assert c.match([1, 2, 3, 4]) == 0 and c.match([5, 6, 7, 8]) == 4
    c.clear()
    assert len(c) == 0 and c.states == 0


@pytest.mark.parametrize("state", [0, ST])
def test_blocks_inserted_without_a_state_give_a_hybrid_no_hit(state: int) -> None:
    """Blocks cached with no prefill end among them (a recompute past its prompt) hold no
    state: a hybrid model cannot resume from them, attention layers can."""
    c = PrefixCache(100, state_blocks=state / 512)
    c.insert([1, 2], ())
    assert c.match([1, 2]) == (2 if not state else 0)


def test_a_repeated_prompt_cannot_resume_from_its_own_end() -> None:
    """The same block-aligned 1,024-token prompt twice: attention reuses all but its last
    token (1,023); a hybrid model must compute that token from a state saved before it, and
    the only one is at the prompt's end, so it prefills again (SGLang matches at most
    len - 1 tokens, then backs off to the last node with a mamba state)."""
    wl = _wl([[7, 8], [7, 8]], [1024, 1024])
    assert _hits(wl, 0) == [0, 1023]
    assert _hits(wl, ST) == [0, 0]
    chunked = _wl([[7, 8], [7, 8]], [1024, 1024])
    assert _hits(chunked, ST, chunk_budget=512) == [0, 512]  # the first chunk's state
