"""plan.sim_deploy: a deployment from catalog names simulates as `pdplan simulate` does."""

from __future__ import annotations

import json

import pytest

from pdplan import Arrivals, build_cluster, simulate_deployment, synthesize
from pdplan.cli import main
from pdplan.errors import ConfigError


def test_the_api_and_the_cli_give_the_same_run(capsys: pytest.CaptureFixture[str]) -> None:
    wl = synthesize(n=300, rate=4.0, input="lognormal:2000:0.8", output="lognormal:200:0.8")
    res = simulate_deployment(
        "llama-3.1-70b", "h200", "1P:tp4+1D:tp8", wl, Arrivals("poisson", rate=4.0),
        engine="sglang",
    )  # fmt: skip
    spec = "poisson:rate=4,n=300,isl=lognormal:2000:0.8,osl=lognormal:200:0.8"
    rc = main(["simulate", "--model", "llama-3.1-70b", "--gpu", "h200", "--deployment",
               "1P:tp4+1D:tp8", "--engine", "sglang", "--workload", spec, "--json"])  # fmt: skip
    cli = json.loads(capsys.readouterr().out)
    assert rc == 0
    api = res.summary()
    for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
        assert api[key]["p50"] == pytest.approx(cli[key]["p50"], rel=1e-9), key


def test_build_cluster_takes_the_engines_defaults_and_gathers_warnings() -> None:
    c = build_cluster("llama-3.1-70b", "h100", "1P:tp4+2D:tp8", "vllm")
    assert [i.role for i in c.instances] == ["prefill", "decode", "decode"]
    assert c.instances[0].prefill_token_budget == 8192  # vLLM's budget on >= 70 GiB GPUs
    assert c.config().ttft_overhead_s == c.eff.ttft_overhead_s
    wide = build_cluster("llama-3.1-70b", "h100", "tp16", "vllm")  # TP across two nodes
    assert any("tp16" in w for w in wide.warnings)


def test_an_impossible_layout_is_a_named_error() -> None:
    with pytest.raises(ConfigError, match="does not divide"):
        build_cluster("llama-3.1-70b", "h100", "tp3")


def test_an_unknown_simulator_option_is_a_named_error() -> None:
    wl = synthesize(n=10, rate=1.0)
    with pytest.raises(ConfigError, match=r"unknown SimConfig option.*bogus"):
        simulate_deployment("llama-3.1-8b", "h100", "tp1", wl, bogus=1)


def test_tensorrt_llm_aggregated_pools_reserve_whole_outputs() -> None:
    # GUARANTEED_NO_EVICT is an aggregated / decode admission policy of TensorRT-LLM only:
    # its agg pools get it, vLLM's do not, and prefill / decode pools never carry the flag
    trt = build_cluster("llama-3.1-8b", "h100-sxm", "tp1x2", "trtllm").instances
    assert [s.kv_reserve_output for s in trt] == [True, True]
    vllm = build_cluster("llama-3.1-8b", "h100-sxm", "tp1x2", "vllm").instances
    assert not any(s.kv_reserve_output for s in vllm)
    pd = build_cluster("llama-3.1-8b", "h100-sxm", "1P:tp1,1D:tp1", "trtllm").instances
    assert not any(s.kv_reserve_output for s in pd)
