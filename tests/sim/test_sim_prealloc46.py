"""Decode-side KV pre-allocation (SGLang PD): the decode instance reserves a prompt's KV
before the prefill instance may start it, so a full decode pool holds prompts back."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, RoleSwitch, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import aggs

PREFILL = LinearStepModel(base_s=0.01, per_token_s=0.001)  # a 1,000-token prompt: 1.01 s
DECODE = LinearStepModel(base_s=0.02)  # 20 ms a step, whatever the batch


def _cfg(prealloc: bool, mode: str = "after") -> SimConfig:
    # one prompt a prefill step (budget 1,000); the decode pool (1,500 tokens) holds one
    # 1,000-token prompt and its output, not two; KV 1e6 B a prompt at 1e7 B/s: 0.1 s
    p = InstanceSpec("prefill", PREFILL, node=0, nic_bytes_per_s=1e7, prefill_token_budget=1000)
    d = InstanceSpec("decode", DECODE, node=1, nic_bytes_per_s=1e7, kv_capacity_tokens=1500)
    return SimConfig(
        instances=(p, d),
        kv_bytes_per_token=1000,
        kv_layers=10,
        link_latency_s=0.0,
        transfer_mode=mode,
        decode_prealloc=prealloc,
    )


def _wl() -> Workload:
    return Workload(np.full(2, 1000, np.int32), np.full(2, 5, np.int32), np.zeros(2))


def test_after_prefill_admission_lets_the_second_prompt_prefill_at_once() -> None:
    # r0: prefill 0 -> 1.01, KV 1.01 -> 1.11, 5 decode steps: first token 1.13, done 1.21.
    # r1 prefills 1.01 -> 2.02 while r0 decodes; its KV fits once r0 is done: 2.02 -> 2.12,
    # first token 2.14, done 2.22
    res = simulate(_cfg(False), _wl())
    c = res.columns
    assert c["pf_start"].tolist() == pytest.approx([0.0, 1.01])
    assert c["first"].tolist() == pytest.approx([1.13, 2.14])
    assert c["finish"].tolist() == pytest.approx([1.21, 2.22])
    assert res.metric("queue").tolist() == pytest.approx([0.0, 1.01])
    assert res.metric("slot_wait").tolist() == pytest.approx([0.0, 0.0])


def test_prealloc_holds_the_prompt_back_until_the_decode_pool_has_its_room() -> None:
    # r0 is reserved at 0 s (1,000 of 1,500 tokens); r1's 1,000 do not fit beside it, so its
    # prefill waits for r0 to leave the decode pool at 1.21: prefill 1.21 -> 2.22, KV
    # -> 2.32, first token 2.34, done 2.42 (0.2 s later than without pre-allocation)
    res = simulate(_cfg(True), _wl())
    c = res.columns
    assert c["xfer_start"].tolist() == pytest.approx([0.0, 1.21])  # room reserved
    assert c["pf_start"].tolist() == pytest.approx([0.0, 1.21])
    assert c["first"].tolist() == pytest.approx([1.13, 2.34])
    assert c["finish"].tolist() == pytest.approx([1.21, 2.42])
    # the wait is for the decode slot, before the prefill queue (which is then empty)
    assert res.metric("slot_wait").tolist() == pytest.approx([0.0, 1.21])
    assert res.metric("queue").tolist() == pytest.approx([0.0, 0.0])
    assert res.metric("xfer").tolist() == pytest.approx([0.1, 0.1])
    table = res.request_table()
    assert table["slot_wait"].tolist() == pytest.approx([0.0, 1.21])


def test_prealloc_wait_counts_in_the_decode_instance_queue() -> None:
    # time averages over the run (to 2.42 s): r1 waits 1.21 s queued on the decode instance
    # and none on the prefill instance; without pre-allocation it waits 1.01 s on the
    # prefill instance (run to 2.22 s)
    pre = simulate(_cfg(True), _wl()).summary()["instances"]
    assert pre[0]["mean_queue"] == pytest.approx(0.0)
    assert pre[1]["mean_queue"] == pytest.approx(1.21 / 2.42)
    post = simulate(_cfg(False), _wl()).summary()["instances"]
    assert post[0]["mean_queue"] == pytest.approx(1.01 / 2.22)
    assert post[1]["mean_queue"] == pytest.approx(0.0)


def test_prealloc_layerwise_streams_into_the_reserved_room() -> None:
    # layer-wise: r0's bytes leave from 0 s (done by 0.1 s), its last layer's 1e5 B trail
    # the prefill's end by 0.01 s: KV in at 1.02, first token 1.04, done 1.12; r1 is
    # reserved at 1.12, prefilled 1.12 -> 2.13, in at 2.14, first token 2.16, done 2.24
    res = simulate(_cfg(True, "layerwise"), _wl())
    c = res.columns
    assert c["pf_start"].tolist() == pytest.approx([0.0, 1.12])
    assert c["first"].tolist() == pytest.approx([1.04, 2.16])
    assert c["finish"].tolist() == pytest.approx([1.12, 2.24])


def test_prealloc_matches_exact_mode_and_finishes_everything() -> None:
    rng = np.random.default_rng(3)
    n = 300
    wl = Workload(
        rng.integers(200, 1200, n).astype(np.int32),
        rng.integers(2, 60, n).astype(np.int32),
        np.cumsum(rng.exponential(0.15, n)),
    )
    cfg = replace(_cfg(True), instances=_cfg(True).instances + _cfg(True).instances[1:])
    fast = simulate(cfg, wl).summary()
    ref = simulate(replace(cfg, exact=True), wl).summary()
    assert (fast["finished"], fast["dropped"]) == (n, 0)
    for m in ("ttft_s", "tpot_s"):
        for q in ("p50", "p99"):
            assert fast[m][q] == pytest.approx(ref[m][q], rel=0.01), (m, q)


def test_prealloc_refused_where_it_has_no_meaning_or_is_not_modelled() -> None:
    with pytest.raises(ConfigError, match="disaggregated"):
        SimConfig(instances=aggs(2), decode_prealloc=True)
    with pytest.raises(ConfigError, match="role switches is not modelled"):
        two_d = _cfg(True).instances + _cfg(True).instances[1:]
        replace(_cfg(True), instances=two_d, switches=(RoleSwitch(5.0, 2, "prefill"),))
    with pytest.raises(ConfigError, match="True or False"):
        replace(_cfg(False), decode_prealloc="yes")  # type: ignore[arg-type]
