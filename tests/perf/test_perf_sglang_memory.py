"""SGLang's default --mem-fraction-static rule and its use in KV sizing."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.memory import engine_kv_memory, plan_memory
from pdplan.perf.sglang_memory import (
    sglang_cuda_graph_max_bs,
    sglang_default_chunk,
    sglang_mem_fraction,
)


def _by_hand(
    gpu_gib: float, chunk: int, bs: int, tp: int, dp: int = 1, floor: bool = True
) -> float:
    """server_args.py's arithmetic written out once more (MiB)."""
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * bs + tp / 8 * 1024
    if dp > 1:
        reserved += 3 * bs * dp + (1.5 * bs * dp if bs > 300 else 0)
    if floor and gpu_gib > 60:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_gib * 1024 - reserved) / (gpu_gib * 1024), 3)


@pytest.mark.parametrize(
    ("gib", "chunk", "bs_small", "bs_large"),
    [(16, 2048, 8, 8), (24, 2048, 24, 80), (48, 4096, 32, 160), (80, 8192, 256, 512),
     (141, 8192, 256, 512), (180, 16384, 512, 512)],
)  # fmt: skip
def test_buckets_follow_sglang(gib: float, chunk: int, bs_small: int, bs_large: int) -> None:
    assert sglang_default_chunk(gib) == chunk
    assert sglang_cuda_graph_max_bs(gib, 2) == bs_small
    assert sglang_cuda_graph_max_bs(gib, 8) == bs_large


def test_known_fractions() -> None:
    # H100 80 GB at TP8: 512 + 12288 + 1024 + 1024 = 14848 MiB of 81920 -> 0.819
    assert sglang_mem_fraction(80, Layout(tp=8)) == 0.819
    # B200 at TP8: 512 + 24576 + 1024 + 1024 = 27136 MiB of 184320 -> 0.853
    assert sglang_mem_fraction(180, Layout(tp=8)) == 0.853
    assert sglang_mem_fraction(24, Layout(tp=1)) == _by_hand(24, 2048, 24, 1)
    # a 96 GiB part with a small chunk: the 10 GiB floor holds
    assert sglang_mem_fraction(96, Layout(tp=1), chunk=2048) == _by_hand(96, 2048, 256, 1)
    assert _by_hand(96, 2048, 256, 1) < _by_hand(96, 2048, 256, 1, floor=False)


def test_dp_attention_and_draft_reserve_more() -> None:
    plain = sglang_mem_fraction(80, Layout(tp=8))
    dpa = sglang_mem_fraction(80, Layout(tp=1, dp=8, ep=8))
    assert dpa == _by_hand(80, 8192, 512, 8, dp=8)  # --tp 8 --dp 8: tp_size is every GPU
    assert dpa < plain
    assert sglang_mem_fraction(80, Layout(tp=8), speculative=True) == round(plain - 2048 / 81920, 3)
    assert sglang_mem_fraction(180, Layout(tp=8), chunk=32768) < sglang_mem_fraction(
        180, Layout(tp=8)
    )


def test_engine_kv_memory_dispatch() -> None:
    h100, lay = get_gpu("h100"), Layout(tp=2)
    assert engine_kv_memory("sglang", h100, lay) == (sglang_mem_fraction(80, lay), False)
    assert engine_kv_memory("sglang") == (0.9, False)  # launch unknown: the stand-in
    assert engine_kv_memory("vllm", h100, lay) == (0.9, False)
    assert engine_kv_memory("trtllm", h100, lay) == (0.9, True)


def test_sglang_default_holds_less_kv_than_vllm_on_h100() -> None:
    m, g, lay = get_model("qwen3-32b"), get_gpu("h100"), Layout(tp=2)
    kv = {}
    for eng in ("vllm", "sglang"):
        frac, of_free = engine_kv_memory(eng, g, lay)
        kv[eng] = plan_memory(m, g, lay, mem_fraction=frac, of_free=of_free).kv_capacity_tokens
    # 0.834 against 0.9 of 80 GiB: 5.3 GiB per GPU less, 2 x 5.3 GiB / 128 KiB per token
    assert 0.7 * kv["vllm"] < kv["sglang"] < 0.9 * kv["vllm"]


def test_does_not_fit_names_the_fraction_behind_the_reserve() -> None:
    from pdplan.errors import DoesNotFitError

    m, g, lay = get_model("llama-3.1-70b"), get_gpu("h100"), Layout(tp=2)
    frac, of_free = engine_kv_memory("sglang", g, lay)
    with pytest.raises(DoesNotFitError, match=rf"memory fraction {frac:.3g} keeps out"):
        plan_memory(m, g, lay, mem_fraction=frac, of_free=of_free)
    plan_memory(m, g, lay, mem_fraction=0.9)  # vLLM's 0.9 holds its 65.7 GiB per GPU
