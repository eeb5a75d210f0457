"""kv_reserve_output: admission on the whole output's KV (TensorRT-LLM GUARANTEED_NO_EVICT)."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.memory import engine_reserves_output_kv
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, simulate, simulate_closed_loop
from pdplan.workload.core import Workload

from .helpers import AGG, DECODE, aggs

# 8 clients of 1,000-token prompts and 1,000-token outputs in a 12,000-token KV pool: all 8
# prompts fit (8,000) but not all 8 outputs (16,000 in all)
ISL, OSL, C, CAP = 1000, 1000, 8, 12_000


@pytest.mark.parametrize("chunk", [None, 2048])
def test_reserving_outputs_admits_what_can_finish_and_never_preempts(chunk: int | None) -> None:
    by_need = simulate_closed_loop(aggs(1, CAP, chunk_budget=chunk), ISL, OSL, C, n_requests=40)
    reserve = simulate_closed_loop(
        aggs(1, CAP, chunk_budget=chunk, kv_reserve_output=True), ISL, OSL, C, n_requests=40
    )
    # admitting on the prompt alone fills the cache mid-decode and evicts; reserving whole
    # requests (6 of 12,000 / 2,000 at once) never does, and the other 2 clients wait
    assert by_need["preemptions"] > 0
    assert reserve["preemptions"] == 0
    assert reserve["finished"] == by_need["finished"] == 40
    assert reserve["ttft_s"]["mean"] > by_need["ttft_s"]["mean"]


def test_running_requests_never_reserve_more_than_the_pool() -> None:
    n = 60
    rng = np.random.default_rng(3)
    wl = Workload(
        rng.integers(200, 1500, n).astype(np.int32), rng.integers(50, 1500, n).astype(np.int32)
    )
    spec = InstanceSpec("agg", AGG, kv_capacity_tokens=6000, kv_reserve_output=True)
    cfg = SimConfig(instances=(spec,), sample_interval_s=0.01)
    res = simulate(cfg, wl, Arrivals("closed", concurrency=12))
    c = res.columns
    assert res.summary()["finished"] == n and res.preemptions == 0
    # at any time, the requests between prefill start and finish hold <= 6,000 tokens of
    # prompt + output: check at every request's prefill start
    need = c["inp"] + c["out"]
    for t in c["pf_start"]:
        live = (c["pf_start"] <= t) & (c["finish"] > t)
        assert need[live].sum() <= 6000


@pytest.mark.parametrize("chunk", [None, 512])
def test_one_token_outputs_free_their_reservation(chunk: int | None) -> None:
    # a one-token output finishes at its prefill, without joining a decode batch: its
    # reservation must go too, or 5 such requests fill the 12,000-token pool for good and the
    # rest wait forever (they ended the run unfinished)
    spec = aggs(1, CAP, chunk_budget=chunk, kv_reserve_output=True)
    res = simulate_closed_loop(spec, 2000, 1, 1, n_requests=20)
    assert res["finished"] == 20 and res["unfinished"] == 0


def test_the_flag_is_checked() -> None:
    with pytest.raises(ConfigError, match="kv_reserve_output=1 must be True or False"):
        InstanceSpec("agg", AGG, kv_reserve_output=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="aggregated instances only, not on a decode"):
        InstanceSpec("decode", DECODE, kv_reserve_output=True)


def test_tensorrt_llm_reserves_outputs_the_others_do_not() -> None:
    assert engine_reserves_output_kv("trtllm") and engine_reserves_output_kv("dynamo-trt")
    assert not engine_reserves_output_kv("vllm") and not engine_reserves_output_kv("sglang")
    assert not engine_reserves_output_kv("no-such-engine")
