"""Cost model: roofline limits, monotonicity, decode affinity, efficiency data."""

from __future__ import annotations

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.step import BatchShape, StepModel, causal_pairs


@pytest.fixture(scope="module")
def cm() -> CostModel:
    return CostModel(get_model("llama-3.1-70b"), get_gpu("h100-sxm"), Layout(tp=4), "vllm")


def test_is_a_step_model(cm: CostModel) -> None:
    assert isinstance(cm, StepModel)


def test_causal_pairs_by_hand() -> None:
    assert causal_pairs(4) == 10  # 1+2+3+4
    assert causal_pairs(2, 3) == 4 + 5


def test_decode_is_at_least_the_weight_read(cm: CostModel) -> None:
    # TP4: 70.55e9 * 2 B / 4 = 35.3 GB per GPU over 3.35 TB/s = 10.5 ms at 100 % bandwidth
    t = cm.decode_step(1, 1000)
    assert t > 70.55e9 * 2 / 4 / 3.35e12
    assert t < 0.05


def test_prefill_is_at_least_the_flops(cm: CostModel) -> None:
    # 2 * params * tokens FLOPs over 4 GPUs at 989 TFLOP/s dense BF16
    t = cm.prefill_time(4000)
    assert t > 2 * 70.55e9 * 4000 / (4 * 989e12)


def test_monotone_in_batch_and_context(cm: CostModel) -> None:
    times = [cm.decode_step(b, 2000) for b in (1, 8, 64, 256)]
    assert times == sorted(times)
    assert cm.decode_step(32, 8000) > cm.decode_step(32, 1000)


def test_decode_affine_matches_step_time(cm: CostModel) -> None:
    a, c = cm.decode_affine(32)
    for ctx in (32 * 2000, 32 * 5000):
        assert a + c * ctx == pytest.approx(
            cm.step_time(BatchShape(decode_seqs=32, decode_ctx=ctx)), rel=0.02
        )


def test_more_tp_lowers_decode_latency() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    t4 = CostModel(m, g, Layout(tp=4)).decode_step(8, 2000)
    t8 = CostModel(m, g, Layout(tp=8)).decode_step(8, 2000)
    assert t8 < t4


def test_fp8_prefill_is_faster_than_bf16() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    bf16 = CostModel(m, g, Layout(tp=4), weight_dtype="bf16").prefill_time(8000)
    fp8 = CostModel(m, g, Layout(tp=4), weight_dtype="fp8").prefill_time(8000)
    assert fp8 < bf16


def test_moe_touches_only_routed_experts_at_batch_one() -> None:
    m, g = get_model("deepseek-v3"), get_gpu("h200-sxm")
    cm = CostModel(m, g, Layout(tp=8), weight_dtype="fp8")
    # batch 1 reads ~37.5B active params, far less than all 671B: well under 671 GB / 8 / 4.8 TB/s
    assert cm.decode_step(1, 1000) < 671e9 / 8 / 4.8e12


def test_efficiency_is_data_per_engine() -> None:
    assert get_efficiency("sglang").chunked is False
    assert get_efficiency("vllm").chunked is True
    with pytest.raises(ConfigError, match="unknown engine"):
        get_efficiency("tgi")


@pytest.mark.parametrize(
    "name", ["llama-3.1-70b", "gpt-oss-120b", "qwen3.5-397b-a17b", "deepseek-v3"]
)
def test_fast_step_time_equals_the_breakdown(name: str) -> None:
    m = get_model(name)
    lay = Layout(tp=8, ep=8) if m.is_moe else Layout(tp=8)
    cm = CostModel(m, get_gpu("h200"), lay, "vllm", weight_dtype="fp8")
    for shape in (
        BatchShape(4096, causal_pairs(4096), 1),
        BatchShape(0, 0.0, 0, 64, 64 * 3000),
        BatchShape(2048, 2 * causal_pairs(1024, 512), 2, 100, 100 * 5000),
    ):
        assert cm.step_time(shape) == pytest.approx(cm.breakdown(shape).total, rel=1e-12)


def test_dp_attention_step_waits_for_the_rank_holding_the_prompt() -> None:
    m, g = get_model("deepseek-v3"), get_gpu("h200")
    dp8 = CostModel(m, g, Layout(tp=1, dp=8, ep=8), "sglang", weight_dtype="fp8")
    # one 8192-token prompt lives on one DP rank: its attention side is not split 8 ways, so
    # it costs more than eight 1024-token prompts, one per rank (same tokens, fewer pairs)
    one = dp8.step_time(BatchShape(8192, causal_pairs(8192), 1))
    eight = dp8.step_time(BatchShape(8192, 8 * causal_pairs(1024), 8))
    assert one > 2 * eight
    # nine prompts: the busiest rank holds two of them, like sixteen spread evenly
    nine = BatchShape(9 * 512, 9 * causal_pairs(512), 9)
    sixteen = BatchShape(16 * 512, 16 * causal_pairs(512), 16)
    a, b = dp8.breakdown(nine), dp8.breakdown(sixteen)
    assert a.attention == pytest.approx(b.attention, rel=1e-9)
    assert a.moe < b.moe  # the experts still see only the nine prompts' tokens
    assert dp8.step_time(nine) == pytest.approx(a.total, rel=1e-12)
    # without DP (or for a dense model) nothing changes: tokens / dp as before
    tp8 = CostModel(m, g, Layout(tp=8, ep=8), "sglang", weight_dtype="fp8")
    lone = BatchShape(8192, causal_pairs(8192), 1)
    assert tp8.step_time(lone) == pytest.approx(tp8.breakdown(lone).total, rel=1e-12)


def test_pipeline_parallel_keeps_micro_batches_in_flight() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    tp4 = CostModel(m, g, Layout(tp=4))
    pp2 = CostModel(m, g, Layout(tp=4, pp=2))
    # a lone sequence cannot be pipelined: same latency as one stage group doing all layers
    assert pp2.decode_step(1, 2000) == pytest.approx(tp4.decode_step(1, 2000), rel=0.05)
    # 64 sequences in 2 micro-batches of 32: every sequence advances faster than on TP4 alone
    assert pp2.decode_step(64, 2000) < tp4.decode_step(64, 2000)
    assert pp2.decode_step(64, 2000) == pytest.approx(tp4.decode_step(32, 2000), rel=0.05)


def test_prompt_token_cost_is_not_split_by_tp() -> None:
    from pdplan.perf.efficiency import get_efficiency

    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    eff = get_efficiency("vllm").with_(prompt_token_s=0.0)
    extra = eff.with_(prompt_token_s=2e-6)
    shape = BatchShape(4096, causal_pairs(4096), 1, 16, 16 * 2000)
    for tp in (2, 8):
        base = CostModel(m, g, Layout(tp=tp), eff=eff).step_time(shape)
        more = CostModel(m, g, Layout(tp=tp), eff=extra)
        # 2 us x 4096 prompt tokens, whatever the TP degree; decode-only steps are unchanged
        assert more.step_time(shape) - base == pytest.approx(2e-6 * 4096, rel=1e-9)
        assert more.step_time(shape) == pytest.approx(more.breakdown(shape).total, rel=1e-12)
        dec = BatchShape(0, 0.0, 0, 16, 16 * 2000)
        assert more.step_time(dec) == CostModel(m, g, Layout(tp=tp), eff=eff).step_time(dec)


def test_engine_token_budget_defaults_follow_gpu_memory() -> None:
    from pdplan.perf.efficiency import get_efficiency

    # SGLang picks --chunked-prefill-size from GPU memory; vLLM max_num_batched_tokens too
    assert get_efficiency("sglang", "l4", 24.0).prefill_chunk == 2048
    assert get_efficiency("sglang", "h100-sxm", 80.0).prefill_chunk == 8192
    assert get_efficiency("sglang", "b200-sxm", 180.0).prefill_chunk == 16384
    assert get_efficiency("vllm", "l40s", 45.0).prefill_chunk == 2048
    assert get_efficiency("vllm", "h200-sxm", 141.0).prefill_chunk == 8192
    assert get_efficiency("vllm", "a100-sxm", 80.0).prefill_chunk == 2048  # A100 exception
    assert get_efficiency("vllm", "a100-sxm", 80.0).max_seqs == 256  # both of its defaults
    assert get_efficiency("vllm", "h100-sxm", 80.0).max_seqs == 1024
    a800 = get_efficiency("vllm", "a800-sxm", 80.0)  # named A800: vLLM's large defaults
    assert (a800.prefill_chunk, a800.max_seqs) == (8192, 1024)
    assert get_efficiency("sglang", "a100-40gb", 40.0).prefill_chunk == 4096  # 35-60 GiB
    assert get_efficiency("trtllm", "b200-sxm", 180.0).prefill_chunk == 8192
    # the cost model passes the GPU's memory in
    cm = CostModel(get_model("qwen3-32b"), get_gpu("b200"), Layout(tp=1), "sglang")
    assert cm.eff.prefill_chunk == 16384


def test_fp8_weights_stream_at_their_own_efficiency() -> None:
    """fp8_stream_eta slows the weight read of FP8 GEMMs only; BF16 and FP4 are untouched."""
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    base = get_efficiency("vllm", g.name, g.hbm_gib)

    def step(dtype: str, eta: float) -> float:
        eff = base.with_(fp8_stream_eta=eta)
        return CostModel(m, g, Layout(tp=4), "vllm", dtype, eff=eff).decode_step(1, 1000)

    # one decode step of a 70B model on TP4 is weight-bound: halving the FP8 streaming
    # efficiency adds about the FP8 weight read again (70.55e9 B / 4 / (3.35e12 * mem_eta))
    extra = step("fp8", 0.5) - step("fp8", 1.0)
    read = 70.55e9 / 4 / (3.35e12 * base.mem_eta)
    assert 0.8 * read < extra < 1.1 * read
    assert step("bf16", 0.5) == step("bf16", 1.0)
    assert step("fp4", 0.5) == step("fp4", 1.0)


def test_token_budget_is_per_dp_rank_where_each_rank_schedules() -> None:
    m, g = get_model("deepseek-v3"), get_gpu("b200")
    lay = Layout(dp=8, ep=8, moe_tp=1)
    vllm = CostModel(m, g, lay, "vllm", "fp8", "fp8")
    sgl = CostModel(m, g, lay, "sglang", "fp8", "fp8")
    # vLLM: one scheduler (max_num_batched_tokens) per DP engine core -> 8 x the budget
    assert vllm.step_token_budget == 8 * int(vllm.eff.prefill_chunk)
    assert vllm.prompt_token_budget == int(vllm.eff.prefill_chunk)
    # SGLang: --chunked-prefill-size is the instance's, each DP rank gets size // dp
    assert sgl.step_token_budget == int(sgl.eff.prefill_chunk)
    assert sgl.prompt_token_budget == int(sgl.eff.prefill_chunk) // 8
    tp = CostModel(m, g, Layout(tp=8, ep=8, moe_tp=1), "vllm", "fp8", "fp8")
    assert tp.step_token_budget == tp.prompt_token_budget == int(tp.eff.prefill_chunk)
    # eight prompts of one rank's budget each fill one DP step; one longer prompt is chunked
    chunk = vllm.prompt_token_budget
    eight = vllm.prefill_time(chunk, 8)
    assert eight == pytest.approx(vllm.step_time(BatchShape(8 * chunk, 8 * causal_pairs(chunk), 8)))
    long1 = vllm.prefill_time(2 * chunk, 1)
    assert long1 > vllm.step_time(BatchShape(2 * chunk, causal_pairs(2 * chunk), 1))


def test_per_sequence_host_work_runs_on_every_dp_rank_side_by_side() -> None:
    m, g = get_model("deepseek-v3"), get_gpu("gb200")
    dp = CostModel(m, g, Layout(dp=32, ep=32, moe_tp=1), "sglang", "fp4", "bf16")
    tp = CostModel(m, g, Layout(tp=32, ep=32, moe_tp=1), "sglang", "fp4", "bf16")
    shape = BatchShape(0, 0.0, 0, 8192, 8192 * 1500.0)
    seq = dp.eff.seq_s
    # 8192 running sequences: one scheduler holds them all under TP, 256 each under DP32
    assert tp.breakdown(shape).overhead - tp._fixed_overhead == pytest.approx(seq * 8192)
    assert dp.breakdown(shape).overhead - dp._fixed_overhead == pytest.approx(seq * 256)
    assert dp.step_time(shape) == pytest.approx(dp.breakdown(shape).total)


def test_gpus_reaching_less_of_their_peak_are_derated_by_measured_mamf() -> None:
    import dataclasses

    from pdplan.perf.efficiency import FIT_MATMUL_ETA, matmul_scale

    m, lay = get_model("llama-3.1-70b"), Layout(tp=8)
    prompt = BatchShape(prefill_tokens=8192, prefill_pairs=8192 * 8193 / 2, prefill_seqs=1)
    mi300x = get_gpu("mi300x")  # MAMF 668.4 of 1307.4 TFLOP/s: 0.51 of peak
    as_fit = dataclasses.replace(mi300x, mamf_bf16_tflops=mi300x.bf16_tflops * FIT_MATMUL_ETA)
    slow = CostModel(m, mi300x, lay, "vllm").breakdown(prompt)
    fast = CostModel(m, as_fit, lay, "vllm").breakdown(prompt)
    k = mi300x.matmul_eta / FIT_MATMUL_ETA  # type: ignore[operator]
    assert k == pytest.approx(0.659, abs=1e-3)
    assert fast.gemm / slow.gemm == pytest.approx(k)  # compute-bound parts take 1 / k longer
    assert fast.attention / slow.attention == pytest.approx(k)
    assert fast.comm == slow.comm and slow.total > fast.total
    # the GPUs the efficiencies were fitted on (and an unmeasured one) are not changed
    for name in ("h100-sxm", "h200-sxm", "b200-sxm", "b300-sxm", "l40s"):
        assert matmul_scale(get_gpu(name).matmul_eta) == 1.0, name
    assert matmul_scale(get_gpu("gb200").matmul_eta) == pytest.approx(0.729 / 0.7756, abs=1e-3)


def test_tensorrt_llm_needs_an_nvidia_gpu() -> None:
    with pytest.raises(ConfigError, match="TensorRT-LLM runs only on NVIDIA GPUs; mi355x is AMD"):
        CostModel(get_model("llama-3.1-8b"), get_gpu("mi355x"), Layout(tp=1), "trtllm")


def test_engine_aliases() -> None:
    from pdplan.catalog import get_gpu, get_model
    from pdplan.errors import ConfigError
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.efficiency import canonical_engine
    from pdplan.perf.memory import engine_kv_memory

    assert canonical_engine("TensorRT-LLM") == "trtllm"
    assert canonical_engine("atom") == "vllm"  # ROCm ATOM: "a lightweight vLLM-like" engine
    assert engine_kv_memory("ATOM") == engine_kv_memory("vllm")
    cm = CostModel(get_model("llama-3.1-8b"), get_gpu("mi355x"), Layout(tp=1), "atom")
    assert cm.engine == "vllm"
    with pytest.raises(ConfigError, match="unknown engine 'tgi'"):
        canonical_engine("tgi")


@pytest.mark.parametrize(
    ("model", "gpu", "layout", "wdt"),
    [
        ("llama-3.1-70b", "h200", "tp4", None),
        ("llama-3.1-8b", "h100", "tp1", "fp8"),
        ("deepseek-r1", "b200", "tp8-ep8", "fp4"),
        ("qwen3-235b-a22b", "h200", "tp8", "fp8"),
        ("gpt-oss-120b", "b200", "tp1", None),
        ("nemotron-3-super-120b-a12b", "b200", "tp4", None),
    ],
)
def test_token_grid_interpolation_error_is_small(
    model: str, gpu: str, layout: str, wdt: str | None
) -> None:
    """Prompt-sized token counts come off a 32-token grid (costmodel.TOKEN_GRID): within 0.3 %
    of evaluating every layer at that exact count."""
    import pdplan.perf.costmodel as cmod
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout

    args = (get_model(model), get_gpu(gpu), Layout.parse(layout), "vllm", wdt)
    counts = range(513, 16_384, 37)
    grid_cm, exact_cm = cmod.CostModel(*args), cmod.CostModel(*args)
    grid = [sum(grid_cm._token_parts(t)) for t in counts]
    exact_from, cmod.TOKEN_GRID_FROM = cmod.TOKEN_GRID_FROM, 10**9
    try:
        exact = [sum(exact_cm._token_parts(t)) for t in counts]
    finally:
        cmod.TOKEN_GRID_FROM = exact_from
    errors = [abs(g / e - 1) for g, e in zip(grid, exact, strict=True)]
    assert max(errors) < 3e-3


def test_compound_framework_names_resolve_to_their_engine() -> None:
    from pdplan.perf.efficiency import canonical_engine
    from pdplan.perf.memory import engine_kv_memory

    # InferenceMAX's framework names: an orchestrator / transport / build around one engine
    for name, eng in [
        ("dynamo-trt", "trtllm"),
        ("dynamo-sglang", "sglang"),
        ("mori-sglang", "sglang"),
        ("sglang-rocm", "sglang"),
        ("tensorrt-llm-serve", "trtllm"),
        ("Dynamo vLLM", "vllm"),
    ]:
        assert canonical_engine(name) == eng
        assert engine_kv_memory(name) == engine_kv_memory(eng)
    for bad in ("vllm-sglang", "llm", "dynamo"):  # two engines, or none as a whole word
        with pytest.raises(ConfigError, match="unknown engine"):
            canonical_engine(bad)
