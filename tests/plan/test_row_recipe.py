"""InferenceMAX TensorRT-LLM recipe settings of measured rows: context gates, token budgets
and the first token's stream-interval delay."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.perf._rows import measured_row

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.sglang_memory import sglang_mem_fraction
from pdplan.plan.accuracy_sim import simulate_measured_row
from pdplan.plan.row_memory import RAISED_MEM_FRACTION, row_kv_memory
from pdplan.plan.row_recipe import recipe_text, row_gate, row_recipe_eff, row_token_budget
from pdplan.plan.row_setup import recipe_mem_fraction
from pdplan.plan.row_spec import row_cost_model
from pdplan.sim.gate import ContextGate

from .test_row_spec import BASE, _one

PLAIN = "image=nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post2"
OSS = dict(  # gpt-oss-120b with attention DP over 4 ranks
    model_path="openai/gpt-oss-120b",
    gemm_quant_mode="w4a16_mxfp4",
    moe_quant_mode="w4a16_mxfp4",
    precision="fp4",
    tp_size="1",
    attention_dp_size="4",
)


def _row(tmp_path: Path, **kw: str) -> MeasuredRow:
    return _one(tmp_path, **kw)


def test_deepseek_attention_dp_rows_get_the_recipes_balance_gate(tmp_path: Path) -> None:
    row = _row(tmp_path, tp_size="1", attention_dp_size="8", moe_ep_size="8", batch_size="64")
    assert row_gate(row) == ContextGate("balance", 60, ranks=8, wait_steps=0)
    oss = _row(tmp_path, **OSS, moe_ep_size="4")
    # gpt-oss's recipe keeps TensorRT-LLM's AttentionDpConfig defaults
    assert row_gate(oss) == ContextGate("balance", 50, ranks=4, wait_steps=10)
    assert row_gate(_row(tmp_path)) is None  # TP8 without DP, MTP: no gate
    assert row_gate(_row(tmp_path, backend="vllm")) is None
    not_imax = dict(silicon_data_source="source_file=gap-analysis.csv")
    assert row_gate(_row(tmp_path, attention_dp_size="8", tp_size="1", **not_imax)) is None


def test_fp8_plain_recipe_waits_for_a_batch_at_1k_and_64_to_255_clients(tmp_path: Path) -> None:
    src = BASE["silicon_data_source"].replace(BASE["silicon_data_source"].split("; ")[-1], PLAIN)
    row = _row(tmp_path, silicon_data_source=src, batch_size="128")
    # max_num_tokens: (128 + 1024 + 64) rounded up to 64 = 1216, at least 8192
    assert row_gate(row) == ContextGate("batch", 40, tokens=int(0.8 * 8192))
    assert row_gate(_row(tmp_path, silicon_data_source=src, batch_size="256")) is None
    assert row_gate(_row(tmp_path, silicon_data_source=src, osl="8192", batch_size="128")) is None


def test_token_budgets_follow_the_recipes_max_num_tokens(tmp_path: Path) -> None:
    src = BASE["silicon_data_source"].replace(BASE["silicon_data_source"].split("; ")[-1], PLAIN)
    assert row_token_budget(_row(tmp_path, silicon_data_source=src)) == 8192  # floor
    # (4 + 8192 + 64) -> 8320 when it passes the floor
    assert row_token_budget(_row(tmp_path, silicon_data_source=src, isl="8192")) == 8320
    # MTP (K = 3) at TP8, C = 4: ((3 + 1) * 4 + 1024 + 64) -> 1152, no floor
    assert row_token_budget(_row(tmp_path)) == 1152
    # MTP with attention DP (K = 1), 8 clients a rank (C = 64): (2 * 8 + 1024 + 64) -> 1152
    dp = _row(tmp_path, tp_size="1", attention_dp_size="8", moe_ep_size="8", batch_size="8")
    assert row_token_budget(dp) == 1152
    assert row_token_budget(_row(tmp_path, backend="sglang")) is None
    # disaggregated rows ran Dynamo's recipes, not these single-node scripts
    disagg = _row(
        tmp_path, mode="disagg", prefill_tp_size="8", decode_tp_size="8",
        prefill_num_workers="1", decode_num_workers="1",
    )  # fmt: skip
    assert disagg.mode == "disagg" and row_token_budget(disagg) is None
    eff = get_efficiency("trtllm", "b200_sxm")
    assert row_recipe_eff(disagg, eff) == eff


def test_recipe_eff_sets_the_budget_and_the_deepseek_first_token_delay(tmp_path: Path) -> None:
    eff = get_efficiency("trtllm", "b200_sxm")
    got = row_recipe_eff(_row(tmp_path), eff)
    assert got.prefill_chunk == 1152 and got.ttft_decode_steps == 9.0
    other = row_recipe_eff(_row(tmp_path, backend="sglang"), get_efficiency("sglang"))
    assert other == get_efficiency("sglang")


def test_simulated_balance_gate_raises_ttft_of_a_dp_row(tmp_path: Path) -> None:
    import pdplan.plan.accuracy_sim as acc

    row = _row(
        tmp_path,
        **OSS,
        moe_ep_size="2",
        moe_tp_size="2",
        isl="8192",
        batch_size="16",
        silicon_data_source="image=nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc2; "
        "silicon_concurrency=64; workflow_run_id=1",
    )
    gated = simulate_measured_row(row).ttft_ms
    orig = acc.row_gate
    try:
        acc.row_gate = lambda r: None  # type: ignore[assignment]
        plain = simulate_measured_row(row).ttft_ms
    finally:
        acc.row_gate = orig  # type: ignore[assignment]
    assert gated > 1.5 * plain  # prompts wait for all 4 ranks or 50 iterations


def test_rows_output_names_the_recipe_settings(tmp_path: Path) -> None:
    from pdplan.plan.accuracy import predict_row, prediction_record

    rec = prediction_record(predict_row(_row(tmp_path)))
    assert rec["recipe"] == "max_num_tokens=1152; first_token_steps=9"
    dp = _row(tmp_path, tp_size="1", attention_dp_size="8", moe_ep_size="8", batch_size="8")
    assert recipe_text(dp) == "max_num_tokens=1152; first_token_steps=9; balance=60/0 x8"
    assert recipe_text(_row(tmp_path, backend="vllm")) == ""


def test_sglang_deepseek_recipes_set_the_mem_fraction() -> None:
    kw = dict(backend="sglang", model_path="deepseek-ai/DeepSeek-R1", system="b200_sxm",
              source="db-dump; workflow_run_id=1", weight_dtype="fp8")  # fmt: skip
    tp4 = measured_row(**kw, layout=Layout(tp=4))
    assert recipe_mem_fraction(tp4) == 0.95
    assert recipe_mem_fraction(measured_row(**kw, layout=Layout(tp=8, ep=8))) == 0.82
    fp4 = measured_row(**{**kw, "weight_dtype": "fp4"}, layout=Layout(tp=1, dp=8, ep=8))
    assert recipe_mem_fraction(fp4) == 0.85
    other = measured_row(**{**kw, "source": "source_file=x.csv"}, layout=Layout(tp=4))
    assert recipe_mem_fraction(other) is None  # not an InferenceMAX launch: SGLang's own rule
    vllm = measured_row(**{**kw, "backend": "vllm"}, layout=Layout(tp=4))
    assert recipe_mem_fraction(vllm) is None
    gpu, model = get_gpu("b200"), get_model("deepseek-r1")
    cm = row_cost_model(tp4, model, gpu, Layout(tp=4))
    assert row_kv_memory(tp4, gpu, Layout(tp=4), cm) == (0.95, False)
    # without the recipe SGLang's default (0.856 at TP4 on a B200) leaves the FP8 weights no KV,
    # so a measured launch that ran is read as one that raised it
    assert sglang_mem_fraction(180, Layout(tp=4)) < 0.86
    assert row_kv_memory(other, gpu, Layout(tp=4), cm) == (RAISED_MEM_FRACTION, False)
    assert simulate_measured_row(replace(tp4, concurrency=4, isl=8192, osl=1024)).ttft_ms > 0
