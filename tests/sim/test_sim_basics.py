"""Hand-computed single requests, KV link contention, prefix cache, routing, deployments."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdplan.errors import ConfigError
from pdplan.perf.step import LinearStepModel
from pdplan.sim import Arrivals, InstanceSpec, SimConfig, parse_deployment, simulate
from pdplan.sim.cache import PrefixCache
from pdplan.sim.deploy import MAX_INSTANCES
from pdplan.workload.core import Workload

from .helpers import shared_block_pair

STEP = LinearStepModel(base_s=0.01, per_token_s=0.001)  # prefill 100 tok = 0.11 s, decode 0.011 s


def _one(inp: list[int], out: list[int], times: list[float]) -> Workload:
    return Workload(np.array(inp, np.int32), np.array(out, np.int32), np.array(times))


def test_aggregated_single_request_by_hand() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),))
    res = simulate(cfg, _one([100], [5], [0.0]))
    # TTFT = prefill 0.01 + 100*0.001; then 4 decode steps of 0.01 + 0.001*1
    assert res.metric("ttft")[0] == pytest.approx(0.11)
    assert res.metric("tpot")[0] == pytest.approx(0.011)
    assert res.metric("e2e")[0] == pytest.approx(0.11 + 4 * 0.011)


def _disagg(nic: float = 1e6, same_node: bool = False) -> SimConfig:
    p = InstanceSpec("prefill", STEP, node=0, nic_bytes_per_s=nic, nvlink_bytes_per_s=10 * nic)
    d = InstanceSpec(
        "decode",
        LinearStepModel(base_s=0.02),
        node=0 if same_node else 1,
        nic_bytes_per_s=nic,
        nvlink_bytes_per_s=10 * nic,
    )
    return SimConfig(instances=(p, d), kv_bytes_per_token=1000, link_latency_s=0.001)


def test_disaggregated_ttft_includes_transfer_and_first_decode_step() -> None:
    res = simulate(_disagg(), _one([100], [5], [0.0]))
    # prefill 0.11 + KV 100*1000 B / 1e6 B/s = 0.1 + latency 0.001 + first decode step 0.02
    assert res.metric("ttft")[0] == pytest.approx(0.231)
    assert res.metric("xfer")[0] == pytest.approx(0.101)
    assert res.metric("tpot")[0] == pytest.approx(0.02)


def test_same_node_uses_nvlink() -> None:
    res = simulate(_disagg(same_node=True), _one([100], [5], [0.0]))
    # 1e5 B at 1e7 B/s + NVLink's own latency (SimConfig default 10 us), not the NIC's 1 ms
    assert res.metric("xfer")[0] == pytest.approx(0.01 + 10e-6)
    cfg = replace(_disagg(same_node=True), nvlink_latency_s=0.002)
    assert simulate(cfg, _one([100], [5], [0.0])).metric("xfer")[0] == pytest.approx(0.012)


def test_concurrent_transfers_share_the_link() -> None:
    # two prefill instances finish at 0.11 s; both KV streams enter one decode NIC (1e6 B/s)
    base = _disagg()
    p2 = InstanceSpec("prefill", STEP, node=2, nic_bytes_per_s=1e6)
    cfg = SimConfig(
        instances=(base.instances[0], p2, base.instances[1]),
        kv_bytes_per_token=1000,
        link_latency_s=0.001,
    )
    res = simulate(cfg, _one([100, 100], [5, 5], [0.0, 0.0]))
    assert sorted(res.columns["p_inst"]) == [0, 1]
    assert np.allclose(res.metric("xfer"), 0.2 + 0.001)


def test_layerwise_transfer_overlaps_prefill() -> None:
    cfg = SimConfig(
        instances=_disagg(nic=1e7).instances,
        kv_bytes_per_token=1000,
        link_latency_s=0.0,
        transfer_mode="layerwise",
        kv_layers=10,
    )
    res = simulate(cfg, _one([100], [5], [0.0]))
    # 1e5 B at 1e7 B/s = 0.01 s < prefill 0.11 s: only the last layer (1e4 B) trails: 0.001 s
    assert res.metric("xfer")[0] == pytest.approx(0.001)


def test_prefix_cache_hit_removes_prefill_work() -> None:
    wl = shared_block_pair()
    inst = InstanceSpec("agg", STEP, prefix_cache_blocks=100)
    res = simulate(SimConfig(instances=(inst,), routing="prefix"), wl)
    ttft = res.metric("ttft")
    assert ttft[0] == pytest.approx(0.01 + 1.024)
    assert ttft[1] == pytest.approx(0.01 + 0.512)  # first block cached
    assert list(res.columns["hit"]) == [0, 512]


def test_lru_cache_evicts_oldest() -> None:
    c = PrefixCache(2)
    c.insert([1, 2])
    assert c.lookup([1]) == 1  # refreshes 1
    c.insert([3])  # evicts 2
    assert c.match([1]) == 1 and c.match([2]) == 0 and c.match([3]) == 1


@pytest.mark.parametrize("policy", ["round_robin", "least_tokens", "p2c"])
def test_routing_spreads_simultaneous_requests(policy: str) -> None:
    insts = tuple(InstanceSpec("agg", STEP) for _ in range(4))
    wl = _one([100] * 8, [3] * 8, [0.0] * 8)
    res = simulate(SimConfig(instances=insts, routing=policy), wl)
    counts = np.bincount(res.columns["p_inst"], minlength=4)
    assert counts.sum() == 8 and counts.max() <= (4 if policy == "p2c" else 2)


def test_closed_loop_keeps_concurrency() -> None:
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP, max_batch=1),))
    wl = Workload(np.full(6, 100, np.int32), np.full(6, 1, np.int32))
    res = simulate(cfg, wl, Arrivals("closed", concurrency=2))
    # batch 1 at a time: prefill 0.11 s each; two clients keep the queue at one waiting
    assert np.allclose(np.sort(res.columns["finish"]), 0.11 * np.arange(1, 7))


def test_role_switch_drains_then_changes_role() -> None:
    from pdplan.sim import RoleSwitch

    base = _disagg(nic=1e9)
    insts = (*base.instances, base.instances[0])
    cfg = SimConfig(
        instances=insts,
        kv_bytes_per_token=1000,
        switch_cost_s=1.0,
        switches=(RoleSwitch(0.05, 2, "decode"),),
    )
    res = simulate(cfg, _one([100] * 4, [5] * 4, [0.0, 0.0, 2.0, 2.0]))
    assert res.switches and res.switches[0][1:] == (2, "decode")
    assert res.switches[0][0] >= 1.05
    assert res.summary()["finished"] == 4


def test_deployment_parsing() -> None:
    pools = parse_deployment("4P:tp4+8D:tp8-pp2")
    assert [(p.role, p.count, p.layout.gpus) for p in pools] == [
        ("prefill", 4, 4),
        ("decode", 8, 16),
    ]
    assert parse_deployment("tp4x2")[0].count == 2
    with pytest.raises(ConfigError, match="P pool and a D pool"):
        parse_deployment("4P:tp4")
    with pytest.raises(ConfigError, match="cannot read pool"):
        parse_deployment("4Q:tp4+2D:tp8")
    pools = parse_deployment("4P:tp4@H100-SXM+8D:tp8")
    assert [(p.role, p.gpu) for p in pools] == [("prefill", "h100-sxm"), ("decode", None)]
    pools = parse_deployment("tp4x2@h100+agg:tp8@b200")
    assert [(p.role, p.count, p.gpu) for p in pools] == [("agg", 2, "h100"), ("agg", 1, "b200")]


def test_pools_on_other_hardware_start_a_new_node_with_its_links() -> None:
    from pdplan.parallel.layout import Layout
    from pdplan.sim import build_instances

    step = LinearStepModel(base_s=0.01)

    def make(role: str, lay: Layout, gpu: str | None) -> tuple[LinearStepModel, int]:
        return step, 1000

    def links(gpu: str | None) -> dict[str, float]:
        return {"nic_bytes_per_s": 1.0 if gpu else 2.0, "gpus_per_node": 4 if gpu else 8}

    insts = build_instances(parse_deployment("2P:tp2+3D:tp2@x"), make, links=links)
    assert [i.node for i in insts] == [0, 0, 1, 1, 2]  # 8-GPU node, then 4-GPU nodes of x
    assert [i.nic_bytes_per_s for i in insts] == [2.0, 2.0, 1.0, 1.0, 1.0]
    assert [i.name for i in insts][-1] == "decode2:tp2@x"


def test_closed_loop_range_ratio_draws_lengths_like_the_benchmark_client() -> None:
    from pdplan.sim.api import _lengths

    x = _lengths(np.random.default_rng(0), 1000, 0.8, 5000, 1)
    assert x.min() >= 800 and x.max() <= 1000 and abs(x.mean() - 900) < 5
    assert (_lengths(np.random.default_rng(0), 7, 1.0, 3, 1) == 7).all()


def test_closed_loop_rejects_a_bad_range_ratio() -> None:
    from pdplan.sim import simulate_closed_loop

    with pytest.raises(ConfigError, match="range_ratio"):
        simulate_closed_loop([], 10, 10, 1, range_ratio=1.5)


def test_random_lengths_disperse_lockstep_rounds() -> None:
    from pdplan.sim import simulate_closed_loop

    from .helpers import aggs

    spec = aggs(1, chunk_budget=2048)
    fixed = simulate_closed_loop(spec, 1024, 128, 32, n_requests=640, warmup=32)
    spread = simulate_closed_loop(spec, 1024, 128, 32, n_requests=640, warmup=32, range_ratio=0.8)
    # equal lengths keep 32 clients in lock-step rounds, each round a 32-prompt burst;
    # lengths from [0.8 L, L] spread them out, so a prompt rarely waits behind 31 others
    assert spread["ttft_s"]["mean"] < 0.7 * fixed["ttft_s"]["mean"]


def test_serial_frontend_delays_and_staggers_requests_sent_together() -> None:
    # one API server process: 2 ms + 10 us per prompt token each, one request at a time
    cfg = SimConfig(instances=(InstanceSpec("agg", STEP),), frontend_s=0.002, frontend_token_s=1e-5)
    res = simulate(cfg, _one([100], [5], [0.0]))
    fe = 0.002 + 100 * 1e-5  # 3 ms in the frontend, then the 0.11 s prefill
    assert res.metric("ttft")[0] == pytest.approx(fe + 0.11)
    assert res.metric("tpot")[0] == pytest.approx(0.011)
    # three requests sent at t=0 reach the engine at 3, 6 and 9 ms: the first prefills alone
    res = simulate(cfg, _one([100, 100, 100], [5, 5, 5], [0.0, 0.0, 0.0]))
    ttft = np.sort(res.metric("ttft"))
    assert ttft[0] == pytest.approx(fe + 0.11)
    assert ttft[2] > ttft[0] + 0.1  # the others waited for the first prompt's step
    with pytest.raises(ConfigError, match="frontend"):
        SimConfig(instances=(InstanceSpec("agg", STEP),), frontend_s=-1.0)


@pytest.mark.parametrize("exact", [False, True])
def test_recv_interval_takes_arrivals_in_only_every_r_decode_steps(exact: bool) -> None:
    wl = _one([100, 100], [50, 5], [0.0, 0.2])
    ttft = {}
    for r in (1, 10):
        spec = InstanceSpec("agg", STEP, recv_interval=r)
        ttft[r] = simulate(SimConfig(instances=(spec,), exact=exact), wl).metric("ttft")
    # request 1 prefills 0-0.11 s, then decodes in 0.011 s steps; request 2 arrives at 0.2 s,
    # in decode step 9. Every step: taken in at its end (0.209 s), first token 0.11 s later.
    assert ttft[1][1] == pytest.approx(0.209 + 0.11 - 0.2)
    # every 10 steps (SGLang --scheduler-recv-interval 10): taken in at step 10, 0.22 s
    assert ttft[10][1] == pytest.approx(0.22 + 0.11 - 0.2)
    assert ttft[10][0] == ttft[1][0] == pytest.approx(0.11)  # idle engine: taken in at once
    with pytest.raises(ConfigError, match="recv_interval"):
        InstanceSpec("agg", STEP, recv_interval=0)


def test_instances_take_their_engines_token_budget_and_max_sequences() -> None:
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel
    from pdplan.sim import build_instances

    m, g = get_model("deepseek-v3"), get_gpu("b200")

    def make(role: str, lay: Layout, gpu: str | None = None) -> tuple[CostModel, int]:
        return CostModel(m, g, lay, "vllm", "fp8", "fp8"), 100_000

    insts = build_instances(parse_deployment("1P:dp8-ep8+1D:tp8-ep8"), make)
    chunk = int(insts[1].step_model.eff.prefill_chunk)  # type: ignore[attr-defined]
    assert [i.prefill_token_budget for i in insts] == [8 * chunk, chunk]
    seqs = int(insts[1].step_model.eff.max_seqs)  # type: ignore[attr-defined]
    assert [i.max_batch for i in insts] == [8 * seqs, seqs]  # max_num_seqs per DP rank
    # an explicit budget wins
    insts = build_instances(parse_deployment("1P:dp8-ep8+1D:tp8"), make, prefill_token_budget=64)
    assert {i.prefill_token_budget for i in insts} == {64}
    # a chunking engine's aggregated pools chunk at its budget; P / D pools and --chunk do not
    (agg,) = build_instances(parse_deployment("tp8"), make, chunked=True)
    assert agg.chunk_budget == chunk
    assert build_instances(parse_deployment("tp8"), make)[0].chunk_budget is None
    assert (
        build_instances(parse_deployment("tp8"), make, chunked=True, chunk_budget=512)[
            0
        ].chunk_budget
        == 512
    )
    assert all(
        i.chunk_budget is None
        for i in build_instances(parse_deployment("1P:tp8+1D:tp8"), make, chunked=True)
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [("tp4x2+", "empty pool"), ("tp4 x2", "space inside pool"), ("tp4x-1", "layout 'tp4x-1'")],
)
def test_deployment_typos_are_refused_not_guessed(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_deployment(text)
    assert len(parse_deployment(" 4P:tp4 , 8D:tp8 ")) == 2  # spaces around pools are fine


def test_a_deployment_past_the_instance_cap_is_refused() -> None:
    assert sum(p.count for p in parse_deployment(f"tp4x{MAX_INSTANCES}")) == MAX_INSTANCES
    with pytest.raises(ConfigError, match="10,001 instances, over the simulator's 10,000"):
        parse_deployment(f"1P:tp4+{MAX_INSTANCES}D:tp8")
    with pytest.raises(ConfigError, match="99,999,999 instances"):
        parse_deployment("tp4x99999999")


def test_round_robin_starts_at_the_first_instance() -> None:
    insts = tuple(InstanceSpec("agg", STEP) for _ in range(3))
    wl = _one([100] * 4, [3] * 4, [0.0, 1.0, 2.0, 3.0])
    res = simulate(SimConfig(instances=insts, routing="round_robin"), wl)
    assert list(res.columns["p_inst"]) == [0, 1, 2, 0]


@pytest.mark.parametrize(
    "kw",
    [
        {"mode": "posson", "rate": 1.0},
        {"mode": "poisson"},
        {"mode": "poisson", "rate": float("nan")},
        {"mode": "closed", "concurrency": 2.5},
        {"mode": "closed"},
        {"mode": "trace", "think_s": float("inf")},
    ],
)
def test_bad_arrivals_are_refused_when_built(kw: dict) -> None:
    with pytest.raises(ConfigError):
        Arrivals(**kw)


def test_a_run_cut_short_counts_only_the_requests_that_arrived() -> None:
    wl = _one([100] * 50, [3] * 50, [0.2 * i for i in range(50)])
    s = simulate(SimConfig(instances=(InstanceSpec("agg", STEP),)), wl, until=1.0).summary()
    # arrivals at 0, 0.2, ..., 1.0 (the run's end included) of the 50
    assert s["requests"] == 6 and s["finished"] + s["dropped"] + s["unfinished"] == 6


@pytest.mark.parametrize("role", ["agg", "prefill"])
def test_prefill_steps_cut_long_prompts_to_the_token_budget(role: str) -> None:
    # SGLang --chunked-prefill-size / a prefill instance's token budget: an 8,000-token
    # prompt at a 2,048-token budget takes four prefill steps (it was one step of 8,000)
    p = InstanceSpec(role, STEP, prefill_token_budget=2048, node=0)
    insts = (p,) if role == "agg" else (p, InstanceSpec("decode", STEP, node=0))
    cfg = SimConfig(instances=insts, kv_bytes_per_token=10, trace=True)
    res = simulate(cfg, _one([8000], [4], [0.0]))
    steps = [e for e in res.trace_events or [] if e[1] == "prefill" and e[0] == 0]
    assert [e[4] for e in steps] == [2048, 2048, 2048, 1856]
