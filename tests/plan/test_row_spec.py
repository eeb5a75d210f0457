"""Speculative decoding of measured rows: the spec_decode column, the InferenceMAX recipes
that can be told apart, and the predictions that follow."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.perf.spec_decode import SpecCostModel
from pdplan.plan.accuracy import predict_row
from pdplan.plan.row_spec import image_tag, measured_date, row_spec

BASE = dict(
    id="r",
    silicon_data_source="source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=4; "
    "measured=2026-02-06T17:21:58Z; wip=False; "
    "image=nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post3",
    backend="trtllm",
    model_path="deepseek-ai/DeepSeek-R1",
    system="b200_sxm",
    precision="fp8",
    mode="agg",
    isl="1024",
    osl="1024",
    gemm_quant_mode="fp8_block",
    moe_quant_mode="fp8_block",
    batch_size="4",
    tp_size="8",
    attention_dp_size="1",
    moe_ep_size="1",
    silicon_ttft_ms="195",
    silicon_tpot_ms="5.38",
)


def _rows(tmp_path: Path, *rows: dict[str, str]) -> list[MeasuredRow | tuple[int, str]]:
    path = tmp_path / "m.csv"
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        w.writerows({c: r.get(c, "") for c in cols} for r in rows)
    return list(read_measured(path))


def _one(tmp_path: Path, **kw: str) -> MeasuredRow:
    (row,) = _rows(tmp_path, dict(BASE, **kw))
    assert isinstance(row, MeasuredRow), row
    return row


def test_source_note_fields(tmp_path: Path) -> None:
    row = _one(tmp_path)
    assert image_tag(row) == "1.2.0rc6.post3"
    assert measured_date(row) == "2026-02-06"
    db = _one(tmp_path, silicon_data_source="db-dump/2026-04-27; config_id=82; "
              "workflow_run_id=9; nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2")  # fmt: skip
    assert image_tag(db) == "1.2.0rc6.post2"


def test_inferencemax_mtp_recipes(tmp_path: Path) -> None:
    spec = row_spec(_one(tmp_path))
    assert spec is not None and (spec.method, spec.draft_tokens) == ("mtp", 3)
    dp = row_spec(_one(tmp_path, tp_size="1", attention_dp_size="8", moe_ep_size="8"))
    assert dp is not None and dp.draft_tokens == 1  # attention-DP MTP recipes draft one
    plain = BASE["silicon_data_source"].replace("rc6.post3", "rc6.post2")
    assert row_spec(_one(tmp_path, silicon_data_source=plain)) is None
    # 1.1.0rc2.post2 served both: the plain sweep in December 2025, MTP from January 2026
    old = BASE["silicon_data_source"].replace("1.2.0rc6.post3", "1.1.0rc2.post2")
    assert row_spec(_one(tmp_path, silicon_data_source=old)) is not None
    dec = old.replace("2026-02-06", "2025-12-15")
    assert row_spec(_one(tmp_path, silicon_data_source=dec)) is None
    # not an InferenceMAX note (no workflow run / wip marker): nothing is inferred
    assert row_spec(_one(tmp_path, silicon_data_source="image=x:1.2.0rc6.post3")) is None


def test_qwen35_sglang_recipe_by_image_and_layout(tmp_path: Path) -> None:
    src = "source_file=2026-03-25.csv; measured=2026-03-20; wip=False; image=lmsysorg/sglang:"
    kw = dict(backend="sglang", model_path="Qwen/Qwen3.5-397B-A17B", tp_size="4")
    spec = row_spec(_one(tmp_path, silicon_data_source=src + "v0.5.9-cu130", **kw))
    assert spec is not None and spec.draft_tokens == 3
    assert row_spec(_one(tmp_path, silicon_data_source=src + "v0.5.9-cu130-amd64", **kw)) is None
    kw_ep = dict(kw, moe_ep_size="4")
    assert row_spec(_one(tmp_path, silicon_data_source=src + "v0.5.9-cu130", **kw_ep)) is None


def test_spec_decode_column(tmp_path: Path) -> None:
    row = _one(tmp_path, silicon_data_source="own bench", spec_decode="eagle:2:0.8")
    spec = row_spec(row)
    assert spec is not None and (spec.method, spec.draft_tokens, spec.acceptance) == (
        "eagle",
        2,
        0.8,
    )
    off = _one(tmp_path, spec_decode="None")  # the row's own record beats the recipe rules
    assert off.spec_decode == "none" and row_spec(off) is None
    assert row_spec(_one(tmp_path, spec_decode="")) is not None  # blank: nothing recorded
    (bad,) = _rows(tmp_path, dict(BASE, spec_decode="mtp:x"))
    assert isinstance(bad, tuple) and bad[0] == 2 and "expected METHOD:DRAFT_TOKENS" in bad[1]


def test_mtp_rows_predict_per_accepted_token(tmp_path: Path) -> None:
    mtp = _one(tmp_path)
    plain = _one(
        tmp_path, silicon_data_source=BASE["silicon_data_source"].replace("post3", "post2")
    )
    p_mtp, p_plain = predict_row(mtp), predict_row(plain)
    assert p_mtp.tpot_ms < 0.8 * p_plain.tpot_ms
    # the prompt costs the same; the recipes' first-token delay (plan.row_recipe: 9 decode
    # steps) is 9 steps of K + 1 verified tokens, (1 - 0.7^4) / 0.3 = 2.533 tokens each
    steps_mtp, steps_plain = 9 * 2.533 * p_mtp.tpot_ms, 9 * p_plain.tpot_ms
    assert p_mtp.ttft_ms - steps_mtp == pytest.approx(p_plain.ttft_ms - steps_plain, rel=0.1)


def test_cost_model_is_speculative_only_when_the_row_is(tmp_path: Path) -> None:
    from pdplan.catalog.gpus import get_gpu
    from pdplan.catalog.models import get_model
    from pdplan.plan.row_spec import row_cost_model

    row = _one(tmp_path)
    m, g = get_model(row.model_path), get_gpu(row.system)
    assert row.layout is not None
    assert isinstance(row_cost_model(row, m, g, row.layout), SpecCostModel)
    plain = _one(tmp_path, silicon_data_source="x; silicon_concurrency=4")
    assert plain.layout is not None
    assert not isinstance(row_cost_model(plain, m, g, plain.layout), SpecCostModel)


def test_rows_record_says_how_the_row_was_decoded(tmp_path: Path) -> None:
    from pdplan.plan.accuracy import prediction_record

    mtp = prediction_record(predict_row(_one(tmp_path)))
    assert (mtp["spec_decode"], mtp["spec_decode_from"]) == ("mtp:3:0.7", "recipe")
    plain = _one(tmp_path, silicon_data_source="x; silicon_concurrency=4")
    assert prediction_record(predict_row(plain))["spec_decode"] == ""
    said = prediction_record(predict_row(_one(tmp_path, spec_decode="none")))
    assert (said["spec_decode"], said["spec_decode_from"]) == ("none", "column")


def test_sglang_dsr1_mtp_points_outside_the_plain_search_space(tmp_path: Path) -> None:
    src = "source_file=2026-03-25.csv; measured=2026-03-25; wip=False; "
    src += "image=lmsysorg/sglang:v0.5.9-cu130; silicon_concurrency="
    kw = dict(backend="sglang", tp_size="8")
    spec = row_spec(_one(tmp_path, silicon_data_source=src + "256", batch_size="256", **kw))
    assert spec is not None and spec.draft_tokens == 2  # --speculative-num-steps 2
    # 64 clients: inside the plain recipe's space too, so nothing tells them apart
    assert row_spec(_one(tmp_path, silicon_data_source=src + "64", batch_size="64", **kw)) is None
    long = dict(kw, isl="8192")
    assert row_spec(_one(tmp_path, silicon_data_source=src + "8", batch_size="8", **long))


def test_accuracy_groups_speculative_rows_apart(tmp_path: Path) -> None:
    from pdplan.plan.accuracy import run_accuracy

    path = tmp_path / "m.csv"
    rows = [dict(BASE, id="mtp"), dict(BASE, id="plain", spec_decode="none")]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, list(rows[1]))
        w.writeheader()
        w.writerows({c: r.get(c, "") for c in rows[1]} for r in rows)
    rep = run_accuracy(str(path))
    assert set(rep["agg"]["by_decoding"]) == {"mtp:3:0.7", "none"}
