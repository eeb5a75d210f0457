"""InferenceMAX's vLLM MiniMax-M2.5 FP8 recipes: which rows ran which, and what each sets."""

from __future__ import annotations

from pathlib import Path

from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.measured import MeasuredRow
from pdplan.plan.accuracy_sim import simulate_measured_row
from pdplan.plan.row_recipe import recipe_text, row_recipe_eff, row_token_budget
from pdplan.plan.row_setup import kv_dtype_for, recipe_mem_fraction
from pdplan.plan.row_vllm import minimax_fp8_recipe, release

from .test_row_spec import _one

SRC = (
    "source_file=2026-04-06.csv; model=MiniMax-M2.5; silicon_concurrency={c}; "
    "measured=2026-04-03T00:00:00.000Z; wip=False; image=vllm/vllm-openai:v{v}-cu130"
)


def _mm(tmp_path: Path, version: str = "0.19.0", c: int = 64, **kw: str) -> MeasuredRow:
    row = dict(
        silicon_data_source=SRC.format(c=c, v=version),
        backend="vllm",
        backend_version=version,
        model_path="MiniMaxAI/MiniMax-M2.5",
        precision="fp8",
        isl="8192",
        osl="1024",
        gemm_quant_mode="fp8",
        moe_quant_mode="fp8",
        batch_size=str(c),
        tp_size="2",
        moe_ep_size="1",
        silicon_ttft_ms="911",
        silicon_tpot_ms="33.5",
    )
    row.update(kw)
    return _one(tmp_path, **row)


def test_release_reads_major_minor_or_none() -> None:
    assert release("0.19.0") == (0, 19) and release("v0.15.1") == (0, 15)
    assert release("nightly-5b8c30d6") is None and release("") is None


def test_the_recipe_follows_the_image(tmp_path: Path) -> None:
    assert minimax_fp8_recipe(_mm(tmp_path, "0.19.0")) == "fp8-kv"
    assert minimax_fp8_recipe(_mm(tmp_path, "0.21.0")) == "fp8-kv"
    assert minimax_fp8_recipe(_mm(tmp_path, "0.17.0")) == "v0.17"
    # a version neither recipe ran on, a nightly WIP build, is not guessed
    assert minimax_fp8_recipe(_mm(tmp_path, "0.18.0")) is None
    nightly = _mm(tmp_path, "0.19.0", backend_version="nightly-5b8c30d62b754b57")
    assert minimax_fp8_recipe(nightly) is None


def test_other_rows_keep_the_engine_defaults(tmp_path: Path) -> None:
    assert minimax_fp8_recipe(_mm(tmp_path, system="h100_sxm")) is None  # not Blackwell
    fp4 = _mm(tmp_path, precision="fp4", gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4")
    assert minimax_fp8_recipe(fp4) is None  # the NVFP4 script is another recipe
    gap = _mm(tmp_path, silicon_data_source="source_file=gap.csv; silicon_concurrency=64")
    assert minimax_fp8_recipe(gap) is None  # not an InferenceMAX sweep
    assert minimax_fp8_recipe(_mm(tmp_path, backend="sglang")) is None


def test_each_recipe_sets_kv_dtype_memory_and_step_budget(tmp_path: Path) -> None:
    new, old = _mm(tmp_path, "0.19.0"), _mm(tmp_path, "0.17.0")
    assert (kv_dtype_for(new), recipe_mem_fraction(new), row_token_budget(new)) == (
        "fp8",
        0.90,
        2 * 8192,  # --max-num-batched-tokens $((ISL * 2))
    )
    assert (kv_dtype_for(old), recipe_mem_fraction(old), row_token_budget(old)) == (
        "bf16",
        0.95,
        None,
    )
    eff = get_efficiency("vllm", "b200_sxm")
    assert row_recipe_eff(new, eff).prefill_chunk == 16384
    assert row_recipe_eff(old, eff) == eff
    assert "kv_cache_dtype=fp8" in recipe_text(new)
    assert "max_num_batched_tokens=16384" in recipe_text(new)


def test_the_fp8_pool_holds_what_the_v019_rows_show(tmp_path: Path) -> None:
    # 8k / 1k at TP2 on B200, 64 clients: measured 0.83-0.92 s TTFT on v0.19 (no KV queue),
    # 3.4 s on v0.17 (a queue). The FP8 pool holds the 64 lock-stepped requests; the v0.17
    # BF16 pool (0.95 of the device, 523k tokens) does not hold 64 x 9,216 tokens.
    new = simulate_measured_row(_mm(tmp_path, "0.19.0"))
    old = simulate_measured_row(_mm(tmp_path, "0.17.0"))
    assert new.kv_tokens > 64 * (8192 + 1024) > old.kv_tokens
    assert new.ttft_ms < 1.5e3 < old.ttft_ms
