"""Layer-wise KV transfer of a chunked prompt: it starts with the first chunk, not the last."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.perf.step import LinearStepModel
from pdplan.sim import InstanceSpec, SimConfig, simulate
from pdplan.workload.core import Workload

from .helpers import shared_block_pair

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # a 2,048-token chunk: 2.058 s
DECODE = LinearStepModel(base_s=0.02)


def _cfg(mode: str, nic: float, p_cap: int = 1_000_000) -> SimConfig:
    p = InstanceSpec(
        "prefill",
        STEP,
        node=0,
        nic_bytes_per_s=nic,
        prefill_token_budget=2048,
        kv_capacity_tokens=p_cap,
    )
    d = InstanceSpec("decode", DECODE, node=1, nic_bytes_per_s=nic)
    return SimConfig(
        instances=(p, d),
        kv_bytes_per_token=1000,
        link_latency_s=0.0,
        transfer_mode=mode,
        kv_layers=10,
    )


def _wl(n: int) -> Workload:
    return Workload(np.full(n, 8000, np.int32), np.full(n, 4, np.int32), np.zeros(n))


def test_slow_link_moves_earlier_chunks_kv_while_later_chunks_compute() -> None:
    # 8,000 tokens at a 2,048 budget: chunks of 2048 x 3 + 1856, prefill ends at
    # 3 * 2.058 + 1.866 = 8.04 s. KV 8e6 B at 1e6 B/s = 8 s.
    after = simulate(_cfg("after", 1e6), _wl(1))
    assert after.metric("xfer")[0] == pytest.approx(8.0)
    assert after.metric("ttft")[0] == pytest.approx(8.04 + 8.0 + 0.02)
    lw = simulate(_cfg("layerwise", 1e6), _wl(1))
    # the stream starts with the first chunk at 0 s; its bytes are out by 8.0 s, before the
    # prefill ends, so only the last chunk's last layer trails: 1856 x 1000 B / 10 layers
    # at 1e6 B/s = 0.1856 s (starting at the last chunk, as before, it ended at 14.17 s)
    assert lw.metric("xfer")[0] == pytest.approx(0.1856)
    assert lw.metric("ttft")[0] == pytest.approx(8.04 + 0.1856 + 0.02)


def test_link_slower_than_the_prefill_bounds_the_layerwise_transfer() -> None:
    # 5e5 B/s: 16 s for the KV from 0 s, well past the prefill's 8.04 s end
    lw = simulate(_cfg("layerwise", 5e5), _wl(1))
    assert lw.metric("ttft")[0] == pytest.approx(16.0 + 0.02)
    assert lw.metric("xfer")[0] == pytest.approx(16.0 - 8.04)


def test_prefill_instance_keeps_the_kv_until_its_last_chunk_ends() -> None:
    # a fast link sends the first chunks' KV long before the prompt is done; the prefill
    # instance still holds it (the next chunks attend to it), so a second prompt that fits
    # only once the first's KV is gone starts after the first's prefill, not mid-way
    res = simulate(_cfg("layerwise", 1e9, p_cap=8100), _wl(2))
    s = res.summary()
    assert s["finished"] == 2
    pf_start, pf_end = res.columns["pf_start"], res.columns["pf_end"]
    first, second = np.argsort(pf_start)
    assert pf_start[second] >= pf_end[first]
    assert pf_end[first] == pytest.approx(8.04)


def test_cached_prefix_kv_does_not_trail_the_prefill() -> None:
    # the second prompt's first 512-token block is a prefix-cache hit: its KV exists before
    # the step starts, so only the 512 tokens the step computes have a last layer to trail
    wl = shared_block_pair()
    p = InstanceSpec("prefill", STEP, node=0, nic_bytes_per_s=1e7, prefix_cache_blocks=100)
    d = InstanceSpec("decode", DECODE, node=1, nic_bytes_per_s=1e7)
    cfg = SimConfig(
        instances=(p, d),
        kv_bytes_per_token=1000,
        link_latency_s=0.0,
        transfer_mode="layerwise",
        kv_layers=10,
        routing="prefix",
    )
    res = simulate(cfg, wl)
    assert list(res.columns["hit"]) == [0, 512]
    # both streams (1.024e6 B at 1e7 B/s: 0.1024 s) end inside their steps (1.034 s, 0.522 s);
    # the last layer trails: 1024 x 1000 B / 10 layers / 1e7 B/s = 0.01024 s for the first,
    # 512 x 1000 / 10 / 1e7 = 0.00512 s for the second (its cached half left earlier)
    assert res.metric("xfer")[0] == pytest.approx(0.01024)
    assert res.metric("xfer")[1] == pytest.approx(0.00512)
