"""Speculative decoding step model: expected tokens per step and per-token step times."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.spec_decode import SpecCostModel, SpecDecode, tokens_per_step
from pdplan.perf.step import BatchShape


def test_tokens_per_step_closed_form() -> None:
    assert tokens_per_step(0.0, 3) == 1.0  # every draft rejected: the bonus token only
    assert tokens_per_step(1.0, 3) == 4.0  # every draft accepted: k + 1
    assert tokens_per_step(0.5, 1) == pytest.approx(1.5)
    # 1 + a + a^2 + a^3, summed by hand
    assert tokens_per_step(0.6, 3) == pytest.approx(1 + 0.6 + 0.36 + 0.216)


@pytest.mark.parametrize(
    "kw",
    [{"method": "medusa"}, {"draft_tokens": 0}, {"acceptance": 1.2}, {"draft_layers": 0}],
)
def test_spec_decode_rejects_bad_settings(kw: dict) -> None:
    with pytest.raises(ConfigError):
        SpecDecode(**kw)


def _models(model: str, gpu: str, acceptance: float, tp: int = 1) -> tuple[CostModel, CostModel]:
    m, g, lay = get_model(model), get_gpu(gpu), Layout(tp=tp)
    spec = SpecDecode("mtp" if m.num_mtp_layers else "eagle", 3, acceptance)
    return CostModel(m, g, lay, "vllm"), SpecCostModel(m, g, lay, "vllm", spec=spec)


def test_rejected_drafts_only_cost_time() -> None:
    base, spec = _models("meta-llama/Llama-3.1-8B-Instruct", "h100_sxm", 0.0)
    for b in (1, 16, 128):
        shape = BatchShape(decode_seqs=b, decode_ctx=b * 2000)
        assert spec.step_time(shape) > base.step_time(shape)


def test_high_acceptance_speeds_up_memory_bound_decode() -> None:
    # batch-1 dense decode streams the weights once for k + 1 tokens: ~E x fewer passes
    base, spec = _models("meta-llama/Llama-3.1-8B-Instruct", "h100_sxm", 0.8)
    shape = BatchShape(decode_seqs=1, decode_ctx=1000)
    assert spec.step_time(shape) < 0.6 * base.step_time(shape)


def test_per_token_time_falls_with_acceptance() -> None:
    shape = BatchShape(decode_seqs=8, decode_ctx=8 * 3000)
    times = [
        _models("Qwen/Qwen3-32B", "h100_sxm", a, tp=2)[1].step_time(shape) for a in (0.3, 0.6, 0.9)
    ]
    assert times[0] > times[1] > times[2]


def test_prompt_steps_pay_the_draft_head_and_affine_matches() -> None:
    base, spec = _models("deepseek-ai/DeepSeek-V3", "b200_sxm", 0.7, tp=8)
    prompt = BatchShape(prefill_tokens=4096, prefill_pairs=4096 * 4097 / 2, prefill_seqs=1)
    extra = spec.step_time(prompt) / base.step_time(prompt) - 1.0
    assert extra == pytest.approx(1 / 61)  # one MTP layer over the prompt, of 61
    a, c = spec.decode_affine(32)
    shape = BatchShape(decode_seqs=32, decode_ctx=32 * 4000)
    assert a + c * shape.decode_ctx == pytest.approx(spec.step_time(shape), rel=1e-6)


def test_verification_attention_counts_every_query() -> None:
    # MLA decode over an FP8 latent at TP4 is ~120 FLOP per KV byte: 4 queries per sequence
    # pass B200's ridge, so verification attention costs more than one query's, the KV read once
    m, g, lay = get_model("deepseek-ai/DeepSeek-V3"), get_gpu("b200_sxm"), Layout(tp=4)
    spec = SpecCostModel(m, g, lay, "trtllm", "fp8", "fp8", spec=SpecDecode("mtp", 3, 0.7))
    assert spec._extra_ctx_s > 0.0
    one = SpecCostModel(m, g, lay, "trtllm", "fp8", "fp8", spec=SpecDecode("mtp", 1, 0.7))
    assert one._extra_ctx_s < spec._extra_ctx_s


def test_draft_head_takes_memory() -> None:
    from pdplan.perf.memory import draft_head_bytes, plan_memory

    m, g, lay = get_model("deepseek-ai/DeepSeek-V3"), get_gpu("b200_sxm"), Layout(tp=8)
    plain = plan_memory(m, g, lay, "fp8", "fp8")
    mtp = plan_memory(m, g, lay, "fp8", "fp8", draft_layers=1)
    head = draft_head_bytes(m, lay, 1, "fp8")
    # one MoE layer of 256 experts x 3 x 7168 x 2048 FP8 weights over 8 GPUs: ~1.4 GB each
    assert 1.2e9 < head < 1.7e9
    assert mtp.weights_bytes == pytest.approx(plain.weights_bytes + head)
    assert mtp.kv_capacity_tokens < plain.kv_capacity_tokens


def test_mtp_needs_the_models_mtp_layers() -> None:
    m, g, lay = get_model("meta-llama/Llama-3.1-8B-Instruct"), get_gpu("h100_sxm"), Layout(tp=1)
    with pytest.raises(ConfigError, match="ships no MTP layers"):
        SpecCostModel(m, g, lay, "vllm", spec=SpecDecode("mtp", 2))


@pytest.mark.parametrize(
    ("text", "want"),
    [("mtp:3", ("mtp", 3, 0.7)), (" Eagle : 2 : 0.8 ", ("eagle", 2, 0.8)), ("none", None)],
)
def test_parse_spec(text: str, want: tuple | None) -> None:
    from pdplan.perf.spec_decode import parse_spec

    got = parse_spec(text)
    assert (got and (got.method, got.draft_tokens, got.acceptance)) == want


@pytest.mark.parametrize("text", ["mtp", "mtp:3:0.5:1", "mtp:x", "mtp:\u0663", "mtp:-1", "3:mtp"])
def test_parse_spec_rejects(text: str) -> None:
    from pdplan.perf.spec_decode import parse_spec

    with pytest.raises(ConfigError, match="expected METHOD:DRAFT_TOKENS"):
        parse_spec(text.encode().decode("unicode_escape"))
