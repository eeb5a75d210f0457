"""accuracy --simulate: a measured row predicted by simulating its closed loop."""

from __future__ import annotations

import pytest
from tests.perf._rows import measured_row

from pdplan.parallel.layout import Layout
from pdplan.perf.measured import MeasuredRow
from pdplan.plan.accuracy import predict_row
from pdplan.plan.accuracy_sim import simulate_measured_row


def _row(concurrency: int, osl: int = 128) -> MeasuredRow:
    return measured_row(concurrency=concurrency, osl=osl)


def test_single_client_simulation_agrees_with_the_estimate() -> None:
    sim, est = simulate_measured_row(_row(1)), predict_row(_row(1))
    # one client: no queueing; both are one prefill + frontend overhead, then lone decodes
    assert sim.ttft_ms == pytest.approx(est.ttft_ms, rel=0.15)
    assert sim.tpot_ms == pytest.approx(est.tpot_ms, rel=0.1)


def test_more_clients_cost_latency() -> None:
    lo, hi = simulate_measured_row(_row(4)), simulate_measured_row(_row(64))
    assert hi.tpot_ms > lo.tpot_ms and hi.ttft_ms > lo.ttft_ms


def test_disagg_row_without_workers_is_refused() -> None:
    from dataclasses import replace

    from pdplan.errors import ConfigError

    row = replace(
        _row(8), mode="disagg", layout=None, prefill_layout=Layout(tp=1), decode_layout=Layout(tp=1)
    )
    with pytest.raises(ConfigError, match="not specified"):
        simulate_measured_row(row)


def test_a_layout_that_cannot_exist_is_refused_not_guessed() -> None:
    from dataclasses import replace

    from pdplan.errors import ConfigError

    # some files write wide attention-DP deployments as "TP72": 72 does not divide 128 heads
    row = replace(_row(8), model_path="deepseek-ai/DeepSeek-R1", system="gb200")
    row = replace(row, layout=Layout(tp=72, moe_tp=72))
    for predict in (predict_row, simulate_measured_row):
        with pytest.raises(ConfigError, match="TP=72 does not divide 128 attention heads"):
            predict(row)


def test_random_length_client_breaks_the_lock_step_of_a_fixed_client() -> None:
    from pdplan.errors import ConfigError

    fixed, rand = simulate_measured_row(_row(64)), simulate_measured_row(_row(64), client="random")
    # equal lengths keep the 64 clients arriving in cohorts that queue behind each other's
    # prompts; lengths drawn from [0.8 L, L] spread them, so a request waits for fewer prompts
    assert rand.ttft_ms < fixed.ttft_ms
    assert rand.tpot_ms == pytest.approx(fixed.tpot_ms, rel=0.25)
    with pytest.raises(ConfigError, match="unknown benchmark client"):
        simulate_measured_row(_row(8), client="poisson")


def test_inferencemax_rows_get_their_launch_and_client() -> None:
    from dataclasses import replace

    from pdplan.plan.accuracy_sim import is_inferencemax, recv_interval

    imax = replace(
        _row(8), backend="sglang", system="b200_sxm", source="db-dump; workflow_run_id=758"
    )
    assert is_inferencemax(imax) and not is_inferencemax(_row(8))
    # InferenceMAX SGLang recipes: --scheduler-recv-interval 10, 30 from 16 clients up
    assert recv_interval(imax) == 10
    assert recv_interval(replace(imax, concurrency=64)) == 30
    assert recv_interval(replace(imax, backend="vllm")) == 1
    assert recv_interval(replace(imax, source="aic-auto-gap-analysis")) == 1
    assert recv_interval(replace(imax, system="h200_sxm")) == 1  # its H200 recipes set none
    # per-recipe exceptions (InferenceX benchmarks/single_node/*.sh), at every C
    glm = replace(imax, model_path="zai-org/GLM-5-FP8", weight_dtype="fp8", concurrency=64)
    assert recv_interval(glm) == 1  # glm5_fp8_b200.sh passes no --scheduler-recv-interval
    assert recv_interval(replace(glm, system="b300_sxm")) == 1
    assert recv_interval(replace(glm, weight_dtype="fp4")) == 10  # glm5_fp4_b200.sh
    qwen = replace(glm, model_path="Qwen/Qwen3.5-397B-A17B", weight_dtype="fp4", concurrency=4)
    assert recv_interval(qwen) == 30  # qwen3.5_fp4_b200.sh
    assert recv_interval(replace(qwen, weight_dtype="fp8")) == 10
    assert recv_interval(replace(qwen, weight_dtype="fp8", concurrency=16)) == 30
    assert recv_interval(replace(qwen, weight_dtype="fp8", system="b300_sxm", concurrency=64)) == 10
    # its SGLang recipes for FP8 / FP4 checkpoints on Blackwell launch with --kv-cache-dtype
    # fp8_e4m3; other rows keep BF16
    from pdplan.plan.accuracy import kv_dtype_for

    fp8_b200 = replace(imax, weight_dtype="fp8", system="b200_sxm")
    assert kv_dtype_for(fp8_b200) == "fp8"
    assert kv_dtype_for(replace(fp8_b200, weight_dtype="bf16")) == "bf16"
    assert kv_dtype_for(replace(fp8_b200, system="h200_sxm")) == "bf16"
    assert kv_dtype_for(replace(fp8_b200, source="aic-auto-gap-analysis")) == "bf16"
    assert kv_dtype_for(replace(fp8_b200, backend="vllm")) == "bf16"
    goss = replace(imax, backend="vllm", model_path="openai/gpt-oss-120b", system="b200_sxm")
    assert kv_dtype_for(goss) == "fp8"  # its gpt-oss recipes on Blackwell: kv-cache-dtype fp8
    assert kv_dtype_for(replace(goss, system="h100_sxm")) == "bf16"
    # an AMD "-FP8-KV" checkpoint carries KV scales and is served with an FP8 cache anywhere
    amd = replace(goss, model_path="amd/Llama-3.3-70B-Instruct-FP8-KV", system="mi355x")
    assert kv_dtype_for(amd) == kv_dtype_for(replace(amd, backend="sglang")) == "fp8"
    # auto: the InferenceMAX client for its rows, the fixed one otherwise
    v = replace(imax, backend="vllm")
    assert simulate_measured_row(v, client="auto") == simulate_measured_row(v, client="random")
    assert simulate_measured_row(_row(8), client="auto") == simulate_measured_row(_row(8))


def test_a_disagg_pool_that_does_not_fit_is_refused_by_both_predictors() -> None:
    from dataclasses import replace

    from pdplan.errors import DoesNotFitError

    # DeepSeek-R1 FP8 on one B200 per DP rank: ~170 GiB of weights per GPU before any KV, which
    # even the raised 0.95 of 180 GiB (RAISED_MEM_FRACTION) cannot hold with its reserve
    row = replace(
        _row(8), model_path="deepseek-ai/DeepSeek-R1", system="b200_sxm", mode="disagg",
        weight_dtype="fp8", layout=None, prefill_layout=Layout(dp=4),
        decode_layout=Layout(tp=8), prefill_workers=1, decode_workers=1,
    )  # fmt: skip
    for predict in (predict_row, simulate_measured_row):
        with pytest.raises(DoesNotFitError, match="short by"):
            predict(row)


def test_rack_scale_gpu_totals_written_as_tp_are_refused() -> None:
    from dataclasses import replace

    from pdplan.errors import ConfigError

    # GB200 "agg" rows reading tp 64 / moe_tp 64 / no EP are GPU totals of disaggregated runs
    row = replace(_row(8), model_path="deepseek-ai/DeepSeek-R1", system="gb200")
    for predict in (predict_row, simulate_measured_row):
        with pytest.raises(ConfigError, match="GPU total of a disaggregated"):
            predict(replace(row, layout=Layout(tp=64, moe_tp=64)))
    # an EP launch across the rack, and TP8 within it, are real deployments and still predict
    for lay in (Layout(tp=8, ep=8, moe_tp=1), Layout(dp=32, ep=32, moe_tp=1)):
        assert predict_row(replace(row, layout=lay)).ttft_ms > 0
    # the rule is for rack-scale NVLink parts: a multi-node TP16 on H100 nodes is a real launch
    h100 = replace(row, system="h100_sxm", weight_dtype="fp8", moe_dtype="fp8")
    assert predict_row(replace(h100, layout=Layout(tp=16, moe_tp=16))).ttft_ms > 0


def test_a_disaggregated_row_with_several_workers_of_each_pool_is_simulated() -> None:
    # xPyD rows repeat one InstanceSpec per pool ([p] * workers): the simulation must take
    # them (their results name them p#1, p#2, ...), as `accuracy --mode disagg --simulate` does
    from dataclasses import replace

    row = replace(
        _row(16),
        mode="disagg",
        layout=None,
        prefill_layout=Layout(tp=1),
        decode_layout=Layout(tp=2),
        prefill_workers=2,
        decode_workers=3,
    )
    p = simulate_measured_row(row)
    assert 0 < p.ttft_ms < 10_000 and 0 < p.tpot_ms < 1_000


def test_vllm_serves_an_nvfp4_checkpoint_with_its_fp8_kv_from_0_14() -> None:
    from dataclasses import replace

    from pdplan.plan.accuracy import kv_dtype_for

    # vllm-project/vllm#30785: an unset --kv-cache-dtype takes hf_quant_config.json's
    # kv_cache_quant_algo (FP8 in NVIDIA's NVFP4 exports) from release 0.14
    nv = replace(_row(8), model_path="MiniMaxAI/MiniMax-M2.5", weight_dtype="fp4",
                 moe_dtype="fp4", system="b200_sxm", version="0.19.0")  # fmt: skip
    assert kv_dtype_for(nv) == "fp8"
    assert kv_dtype_for(replace(nv, version="nightly-5b8c30d6")) == "fp8"  # read as recent
    assert kv_dtype_for(replace(nv, version="v0.14.0")) == "fp8"
    assert kv_dtype_for(replace(nv, version="0.12.0")) == "bf16"  # before the change
    assert kv_dtype_for(replace(nv, weight_dtype="fp8", moe_dtype="fp8")) == "bf16"
    assert kv_dtype_for(replace(nv, system="mi355x")) == "bf16"  # not an NVIDIA export
    assert kv_dtype_for(replace(nv, model_path="openai/gpt-oss-120b", system="h100_sxm")) == "bf16"
    # the FP8 cache holds twice the tokens of the BF16 one it replaces
    fp8 = _kv_tokens(nv)
    bf16 = _kv_tokens(replace(nv, version="0.12.0"))
    assert fp8 == pytest.approx(2 * bf16, rel=0.01)


def _kv_tokens(row: MeasuredRow) -> int:
    """KV tokens of the row's simulated instance."""
    from pdplan.plan.accuracy_sim import _instances

    return _instances(row, None)[0][0].kv_capacity_tokens


def test_a_launch_the_default_leaves_no_kv_ran_with_a_raised_fraction() -> None:
    from dataclasses import replace

    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.plan.row_memory import RAISED_MEM_FRACTION, row_kv_memory
    from pdplan.plan.row_spec import row_cost_model

    # DeepSeek-R1 FP8 at TP4 on GB200 under SGLang: its default rule (0.86 of 185 GiB) leaves no
    # KV beside ~157 GiB of weights per GPU; the measured run fit, so it raised the fraction
    row = replace(
        _row(8), backend="sglang", model_path="deepseek-ai/DeepSeek-R1", system="gb200",
        weight_dtype="fp8", layout=Layout(tp=4),
    )  # fmt: skip
    gpu, model = get_gpu("gb200"), get_model("deepseek-r1")
    cm = row_cost_model(row, model, gpu, Layout(tp=4))
    assert row_kv_memory(row, gpu, Layout(tp=4), cm) == (RAISED_MEM_FRACTION, False)
    assert simulate_measured_row(row).ttft_ms > 0
    # one that fits under the default keeps it
    small = replace(row, model_path="Qwen/Qwen3-32B", weight_dtype=None)
    frac, _ = row_kv_memory(small, gpu, Layout(tp=4), row_cost_model(
        small, get_model("qwen3-32b"), gpu, Layout(tp=4)))  # fmt: skip
    assert frac < RAISED_MEM_FRACTION
