"""InstanceSpec.kv_window_tokens: a sliding-window model's window layers charge each sequence
c * min(L, W) KV-pool tokens (L = prompt + output), not the whole window: a short sequence
takes only the window it fills (vLLM V1's hybrid KV-cache manager allocates a window layer's
blocks as tokens come and frees those leaving the window)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pdplan.cli import main
from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import xpyd

STEP = LinearStepModel(base_s=0.01, per_token_s=1e-4, per_seq_s=1e-4)


def _agg_run(cap: int, n_tokens: tuple[int, int], **kw: object) -> dict:
    """8 closed-loop clients of (prompt, output) = n_tokens on one aggregated instance."""
    inst = InstanceSpec("agg", STEP, kv_capacity_tokens=cap, max_batch=64, **kw)  # type: ignore[arg-type]
    inp, out = n_tokens
    wl = Workload(np.full(200, inp, np.int32), np.full(200, out, np.int32))
    res = simulate(SimConfig(instances=(inst,)), wl, Arrivals("closed", concurrency=8))
    return res.summary()


def test_a_short_sequence_is_charged_the_window_it_fills() -> None:
    # W = 100 tokens at c = 2 pool tokens each; sequences of 40 + 10 = 50 tokens take
    # 50 + 2 x 50 = 150 at their end: 620 tokens hold 4 (one whole window each, 50 + 200,
    # held 2); never more KV than the pool
    short = _agg_run(620, (40, 10), kv_window_tokens=((100, 2.0),))
    whole = _agg_run(620, (40, 10), kv_state_tokens=200)
    assert short["finished"] == whole["finished"] == 200
    running_short = short["instances"][0]["mean_running"]
    running_whole = whole["instances"][0]["mean_running"]
    assert 3.0 < running_short <= 4.0
    assert running_whole <= 2.0 < running_short
    assert short["instances"][0]["peak_kv_used_sampled"] <= 1.0
    assert short["instances"][0]["kv_window_tokens"] == [[100, 2.0]]


def test_a_sequence_past_the_window_is_charged_the_whole_window() -> None:
    # 150 + 50 = 200 tokens >= W: 200 + 2 x 100 = 400 a sequence, as a fixed 200 would be
    a = _agg_run(1650, (150, 50), kv_window_tokens=((100, 2.0),))
    b = _agg_run(1650, (150, 50), kv_state_tokens=200)
    keys = ("ttft_s", "tpot_s", "e2e_s")
    assert [a[k] for k in keys] == [b[k] for k in keys]
    assert a["instances"][0]["mean_running"] == b["instances"][0]["mean_running"]


def test_disaggregated_window_charges_balance() -> None:
    # prefill and decode both charge and free each sequence's window share: all finish, and the
    # decode pool (2,000 tokens; 300 + 1.5 x min(L, 256) a sequence) never overfills
    rng = np.random.default_rng(3)
    inp = rng.integers(20, 400, 300).astype(np.int32)
    out = rng.integers(2, 120, 300).astype(np.int32)
    wl = Workload(inp, out, np.sort(rng.uniform(0, 30, 300)))
    inst = xpyd(1, 2, d_cap=2_000, kv_window_tokens=((256, 1.5),))
    s = simulate(SimConfig(instances=inst), wl, Arrivals("trace")).summary()
    assert s["finished"] == 300
    for d in s["instances"][1:]:
        assert 0 < d["peak_kv_used_sampled"] <= 1.0


def test_a_sequence_that_cannot_fit_with_its_window_is_dropped_with_the_reason() -> None:
    # 900 + 2 x 100 (window full) + 1 > 1,000: it could never be admitted
    wl = Workload(np.array([700, 10], np.int32), np.array([200, 5], np.int32))
    inst = InstanceSpec("agg", STEP, kv_capacity_tokens=1_000, kv_window_tokens=((100, 2.0),))
    res = simulate(SimConfig(instances=(inst,)), wl, Arrivals("closed", concurrency=1))
    s = res.summary()
    assert s["finished"] == 1 and s["dropped"] == 1


@pytest.mark.parametrize(
    "bad", [((0, 1.0),), ((100, -1.0),), ((100.5, 1.0),), ((100, float("inf")),), (100, 2.0)]
)
def test_bad_window_charges_are_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="kv_window_tokens"):
        InstanceSpec("agg", STEP, kv_window_tokens=bad)  # type: ignore[arg-type]


def test_simulate_cli_runs_more_short_gemma_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    # Gemma-3-27B TP2 on L40S, 128 clients at 400 + 300 tokens (below its 1,024-token window):
    # each sequence's 52 window layers hold 700 tokens, not 1,024: ~79 fit the pool (~57 with
    # the whole window charged)
    rc = main(
        ["simulate", "--model", "gemma-3-27b", "--gpu", "l40s", "--deployment", "tp2x1",
         "--workload", "closed:c=128,n=800,isl=400,osl=300", "--json"]
    )  # fmt: skip
    s = json.loads(capsys.readouterr().out)
    assert rc == 0 and s["finished"] == 800
    inst = s["instances"][0]
    (w, c), cap = inst["kv_window_tokens"][0], inst["kv_capacity_tokens"]
    assert w == 1024 and c == pytest.approx(52 / 10)
    fits = cap / (700 + c * 700)
    assert 0.9 * fits <= inst["mean_running"] <= fits
    assert fits > 1.3 * cap / (700 + c * 1024)
