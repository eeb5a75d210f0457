"""perf.kv_pool.growing_pool: the simulator's pool for sliding-window models counts the layers
that grow per token, the window layers as a per-sequence charge of min(its tokens, window)."""

from __future__ import annotations

import json
import math

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.cli import main
from pdplan.parallel.layout import Layout
from pdplan.perf.kv_pool import growing_pool
from pdplan.perf.memory import plan_memory, pool_tokens_per_seq


def _pool(model: str, gpu: str, tp: int) -> tuple[int, int, int, tuple[tuple[int, float], ...]]:
    m, lay = get_model(model), Layout(tp=tp)
    mem = plan_memory(m, get_gpu(gpu), lay)
    cap, fixed, wins = growing_pool(m, lay, "bf16", mem.pool_tokens, mem.state_tokens_per_seq)
    return mem.pool_tokens, cap, fixed, wins


def _charge(wins: tuple[tuple[int, float], ...], tokens: int) -> int:
    """InstanceSpec.kv_window_tokens' charge of a sequence of `tokens` (Instance.seq_fixed)."""
    return math.ceil(sum(c * min(tokens, w) for w, c in wins))


def test_models_without_windows_are_unchanged() -> None:
    pool, cap, fixed, wins = _pool("llama-3.1-70b", "h100", 4)
    assert (cap, fixed, wins) == (pool, 0, ())


@pytest.mark.parametrize(
    ("model", "gpu", "tp"), [("gemma-3-27b", "l40s", 2), ("gpt-oss-120b", "h100", 1)]
)
@pytest.mark.parametrize("tokens", [100, 700, 1024, 2048, 4500, 20000])
def test_a_sequence_fills_what_pool_tokens_per_seq_says(
    model: str, gpu: str, tp: int, tokens: int
) -> None:
    pool, cap, fixed, wins = _pool(model, gpu, tp)
    assert cap > pool and fixed == 0 and len(wins) == 1
    # sequences of `tokens` the two ways of counting hold: within rounding of each other, also
    # below the window (gpt-oss: 128, Gemma 3: 1024), where a whole-window charge held ~2x fewer
    held_sim = cap / (tokens + _charge(wins, tokens))
    held_plan = pool / pool_tokens_per_seq(get_model(model), Layout(tp=tp), "bf16", tokens)
    assert held_sim == pytest.approx(held_plan, rel=2e-3 if tokens >= 500 else 1e-2)


def test_simulated_window_model_runs_the_batch_its_memory_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Gemma-3-27B TP2 on L40S, 64 clients at 4000 + 500 tokens: the pool holds ~35 sequences at
    # full length with the 5-in-6 window layers capped at 1024 tokens (every layer counted per
    # token held 12); never more KV than the pool
    rc = main(
        ["simulate", "--model", "gemma-3-27b", "--gpu", "l40s", "--deployment", "tp2x1",
         "--workload", "closed:c=64,n=300,isl=4000,osl=500", "--json"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    s = json.loads(out)
    inst = s["instances"][0]
    _, cap, fixed, wins = _pool("gemma-3-27b", "l40s", 2)
    assert (inst["kv_capacity_tokens"], inst["kv_state_tokens"]) == (cap, fixed)
    assert [tuple(p) for p in inst["kv_window_tokens"]] == list(wins)
    assert 28 <= inst["mean_running"] <= cap / (4000 + _charge(wins, 4500))
    assert inst["peak_kv_used_sampled"] <= 1.0 and s["finished"] == 300
