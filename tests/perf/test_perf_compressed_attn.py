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
