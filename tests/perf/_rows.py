"""A measured row for tests: an aggregated vLLM Llama-3.1-8B TP1 benchmark, fields overridable."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pdplan.parallel.layout import Layout
from pdplan.perf.measured import MeasuredRow

BASE = MeasuredRow(
    line=2,
    row_id="t",
    backend="vllm",
    version="",
    model_path="meta-llama/Llama-3.1-8B",
    system="h100_sxm",
    mode="agg",
    isl=1024,
    osl=128,
    weight_dtype=None,
    moe_dtype=None,
    concurrency=1,
    layout=Layout(tp=1),
    prefill_layout=None,
    decode_layout=None,
    prefill_workers=0,
    decode_workers=0,
    prefill_batch=None,
    decode_batch=None,
    ttft_ms=100.0,
    tpot_ms=10.0,
)


def measured_row(**changes: Any) -> MeasuredRow:
    """BASE with the given fields changed (MeasuredRow field names)."""
    return replace(BASE, **changes)
