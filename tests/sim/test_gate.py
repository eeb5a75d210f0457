"""TensorRT-LLM context gates (sim.gate): hand-computed take-in times, validation."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.sim.gate import ContextGate, gate_rank
from pdplan.workload.core import Workload

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # prefill 100 tok = 0.11 s, decode 0.011 s


def _starts(
    gate: ContextGate | None, times: list[float], exact: bool = False, out1: int = 50
) -> list[float]:
    """Prefill starts of requests 2.. arriving at `times` (100 tokens, 5 out each). Requests 0
    and 1 (100 tokens, 50 out) arrive at 0 s on an idle engine: 0 prefills 0-0.11 s, 1 is
    taken in then (no decode runs) and prefills 0.11-0.22 s, and from 0.22 s both decode in
    0.012 s steps: step K ends at 0.22 + 0.012 K, and an arrival at 0.3 s finds 6 done."""
    n = len(times) + 2
    wl = Workload(
        np.full(n, 100, np.int32),
        np.array([50, out1] + [5] * len(times), np.int32),
        np.array([0.0, 0.0, *times]),
    )
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP, ctx_gate=gate),), exact=exact)
    return [float(x) for x in simulate(cfg, wl).columns["pf_start"]][2:]


def test_gate_rank_is_a_fixed_spread_over_the_ranks() -> None:
    assert [gate_rank(r, 2) for r in (1, 2)] == [1, 0]
    counts = np.bincount([gate_rank(r, 8) for r in range(8000)], minlength=8)
    assert counts.min() > 900 and counts.max() < 1100  # uniform within 10 %


@pytest.mark.parametrize("exact", [False, True])
def test_balance_gate_waits_for_every_rank_or_the_timeout(exact: bool) -> None:
    balance = ContextGate("balance", 10, ranks=2)
    # no gate: a prompt arriving at 0.3 s is taken in at the end of step 7, 0.304 s
    assert _starts(None, [0.3], exact) == pytest.approx([0.304])
    # one arrival holds one rank of two: it waits for the counter's 10th step (counted from
    # the last take-in, at step 0), 0.34 s
    assert _starts(balance, [0.3], exact) == pytest.approx([0.34])
    # requests 2 and 3 land on ranks 0 and 1: both ranks hold one, released at once
    assert _starts(balance, [0.3, 0.3], exact) == pytest.approx([0.304, 0.304])
    # ... or batching_wait_iters later: covered with 6 steps done, released at step 11
    waiting = ContextGate("balance", 10, ranks=2, wait_steps=5)
    assert _starts(waiting, [0.3, 0.3], exact) == pytest.approx([0.352, 0.352])
    # a rank without a decode: released at once. Request 1 (10 out) leaves at step 9, 0.328 s;
    # then one decode runs for two ranks, in 0.011 s steps: the boundary after 0.4 s, 0.405 s
    assert _starts(balance, [0.4], exact, out1=10) == pytest.approx([0.405])
    # ... even when the waiting prompts cover every rank and a batching wait would follow
    late = ContextGate("balance", 50, ranks=2, wait_steps=20)
    assert _starts(late, [0.4, 0.4], exact, out1=10) == pytest.approx([0.405, 0.405])


@pytest.mark.parametrize("exact", [False, True])
def test_batch_gate_waits_for_tokens_or_its_timeout(exact: bool) -> None:
    batch = ContextGate("batch", 10, tokens=150)
    # 100 waiting tokens + 2 decodes < 150: 10 steps from its arrival (6 done) -> step 16
    assert _starts(batch, [0.3], exact) == pytest.approx([0.22 + 16 * 0.012])
    # two prompts, 200 tokens: the wait ends at the next step boundary
    assert _starts(batch, [0.3, 0.3], exact) == pytest.approx([0.304, 0.304])


@pytest.mark.parametrize("exact", [False, True])
def test_batch_gate_opens_when_the_decode_batch_grows(exact: bool) -> None:
    # request 0 decodes alone; request 1 (2000 tokens, 0.3 s) prefills in 200-token chunks
    # until 2.429 s and then joins the decodes; request 2 (100 tokens) arrives at 0.35 s: 100 +
    # 1 decode < 102 tokens holds it; 100 + 2 decodes opens the gate at the next boundary,
    # 2.441 s, long before its 30-step timeout (2.657 s)
    wl = Workload(
        np.array([100, 2000, 100], np.int32),
        np.array([200, 200, 5], np.int32),
        np.array([0.0, 0.3, 0.35]),
    )
    gate = ContextGate("batch", 30, tokens=102)
    spec = InstanceSpec("agg", STEP, chunk_budget=200, ctx_gate=gate)
    cols = simulate(SimConfig(instances=(spec,), exact=exact), wl).columns
    assert cols["pf_end"][1] == pytest.approx(2.429)
    assert cols["pf_start"][2] == pytest.approx(2.441)


def test_context_gate_refuses_bad_settings() -> None:
    with pytest.raises(ConfigError, match="kind"):
        ContextGate("fifo", 10)
    with pytest.raises(ConfigError, match="timeout_steps"):
        ContextGate("balance", 0)
    with pytest.raises(ConfigError, match="ranks"):
        ContextGate("balance", 10, ranks=0)
    with pytest.raises(ConfigError, match="tokens"):
        ContextGate("batch", 10, tokens=-1)
    with pytest.raises(ConfigError, match="tokens=0 must be an integer >= 1"):
        ContextGate("batch", 10)  # a batch gate waits for some tokens
    with pytest.raises(ConfigError, match="recv_interval"):
        InstanceSpec("agg", STEP, recv_interval=10, ctx_gate=ContextGate("balance", 10))
    with pytest.raises(ConfigError, match="ctx_gate"):
        InstanceSpec("agg", STEP, ctx_gate="balance")  # type: ignore[arg-type]


def test_timeline_counts_prompts_the_gate_holds_as_queued() -> None:
    wl = Workload(
        np.full(3, 100, np.int32), np.array([50, 50, 5], np.int32), np.array([0.0, 0.0, 0.3])
    )
    gate = ContextGate("balance", 10, ranks=2)
    spec = InstanceSpec("agg", STEP, ctx_gate=gate)
    res = simulate(SimConfig(instances=(spec,), sample_interval_s=0.01), wl)
    tl = res.instances[0]["timeline"]  # rows (t, queued, running, kv, state)
    at = {round(float(t), 2): int(q) for t, q in tl[:, :2]}
    assert at[0.33] == 1  # held from 0.3 s to 0.34 s (test above)
    assert at[0.29] == 0 and at[0.36] == 0
