"""DeepSeek-V4 compressed sparse attention in the cost model and the layout checks."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.parallel.checks import require_valid
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.step import BatchShape


def test_deepseek_v4_step_cost_is_sparse() -> None:
    cm = CostModel(get_model("deepseek-v4-flash"), get_gpu("b200"), Layout(tp=8), kv_dtype="fp8")
    assert cm.decode_kink == 512 * 4  # top-512 of entries folding 4 tokens each
    short = cm.step_time(BatchShape(decode_seqs=64, decode_ctx=64 * 4_000))
    long = cm.step_time(BatchShape(decode_seqs=64, decode_ctx=64 * 64_000))
    # 16x the context costs only the heavily compressed layers' 1/128 reads and the index
    assert short < long < 1.2 * short


def test_deepseek_v4_tp_must_divide_output_groups() -> None:
    with pytest.raises(ConfigError, match="TP=16 does not divide 8 output-projection groups"):
        require_valid(get_model("deepseek-v4-flash"), Layout(tp=16))


def test_sparse_gqa_reads_top_k() -> None:
    cm = CostModel(get_model("minimax-m3"), get_gpu("b200"), Layout(tp=8), kv_dtype="fp8")
    assert cm.decode_kink == 2048
    mid = cm.step_time(BatchShape(decode_seqs=32, decode_ctx=32 * 8_000))
    far = cm.step_time(BatchShape(decode_seqs=32, decode_ctx=32 * 128_000))
    dense = CostModel(get_model("minimax-m2.5"), get_gpu("b200"), Layout(tp=8), kv_dtype="fp8")
    grow_dense = dense.step_time(BatchShape(decode_seqs=32, decode_ctx=32 * 128_000)) / (
        dense.step_time(BatchShape(decode_seqs=32, decode_ctx=32 * 8_000))
    )
    # past the top-k only the indexer's scoring and its keys grow (57 of 60 layers sparse)
    assert far / mid < grow_dense


@pytest.mark.parametrize(
    "name",
    [
        "nemotron-3-super-120b-a12b",
        "llama-4-maverick-17b-128e",
        "deepseek-v4-flash",
        "gemma-4-26b-a4b",
        "mimo-v2-flash",
        "minimax-m3",
        "kimi-k3",
        "llama-3.3-nemotron-super-49b",
    ],
)
def test_new_families_step_times_grow_with_work(name: str) -> None:
    model = get_model(name)
    gpu = get_gpu("b300" if model.total_params > 1e12 else "b200")
    cm = CostModel(model, gpu, Layout(tp=8), kv_dtype="fp8")
    small = cm.step_time(BatchShape(decode_seqs=8, decode_ctx=8 * 2_000))
    big = cm.step_time(BatchShape(decode_seqs=128, decode_ctx=128 * 2_000))
    prefill = cm.step_time(BatchShape(8192, 8192 * 8193 / 2, 1))
    assert 0 < small < big < prefill
