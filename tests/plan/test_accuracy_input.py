"""accuracy on rows that leave the deployment unknown: skipped with the reason, others kept."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import pytest

from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.measured import MeasuredRow
from pdplan.plan.accuracy import predict_row, prediction_record, run_accuracy, simulate_row
from pdplan.plan.accuracy_sim import simulate_measured_row

NO_CONC = "row has no concurrency"
AGG = dict(
    id="ok",
    silicon_data_source="x",
    backend="vllm",
    model_path="meta-llama/Llama-3.1-8B",
    system="h100_sxm",
    mode="agg",
    isl="1024",
    osl="128",
    batch_size="4",
    tp_size="1",
    silicon_ttft_ms="100",
    silicon_tpot_ms="10",
)
DISAGG = dict(
    AGG,
    id="pd",
    silicon_data_source="x; silicon_concurrency=4",
    mode="disagg",
    batch_size="",
    tp_size="",
    prefill_num_workers="1",
    prefill_tp_size="1",
    decode_num_workers="1",
    decode_tp_size="1",
    decode_batch_size="4",
)
# (id, fields changed from AGG / DISAGG, the reason it is skipped with)
BAD = [
    ("blank-batch", dict(AGG, batch_size=""), NO_CONC),
    ("zero-batch", dict(AGG, batch_size="0"), NO_CONC),
    ("blank-tp", dict(AGG, tp_size=""), "row has no layout (tp_size empty or 0)"),
    ("pd-no-conc", dict(DISAGG, silicon_data_source="x", decode_batch_size=""), NO_CONC),
    ("pd-no-prefill", dict(DISAGG, prefill_tp_size="0"), "no prefill layout"),
    ("pd-no-decode", dict(DISAGG, decode_tp_size=""), "no decode layout"),
    ("pd-no-workers", dict(DISAGG, decode_num_workers=""), "worker counts"),
]


def _write(path: Path, rows: list[dict[str, str]]) -> str:
    cols = sorted({k for r in rows for k in r})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return str(path)


def _row(concurrency: int | None, layout: Layout | None) -> MeasuredRow:
    return MeasuredRow(
        line=2, row_id="t", backend="vllm", version="", model_path="meta-llama/Llama-3.1-8B",
        system="h100_sxm", mode="agg", isl=1024, osl=128, weight_dtype=None, moe_dtype=None,
        concurrency=concurrency, layout=layout, prefill_layout=None, decode_layout=None,
        prefill_workers=0, decode_workers=0, prefill_batch=None, decode_batch=None,
        ttft_ms=100.0, tpot_ms=10.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (_row(None, Layout(tp=1)), NO_CONC),
        (_row(0, Layout(tp=1)), NO_CONC),
        (_row(4, None), "row has no layout"),
        (
            replace(
                _row(None, None),
                mode="disagg",
                prefill_layout=Layout(tp=1),
                decode_layout=Layout(tp=1),
                prefill_workers=1,
                decode_workers=1,
            ),
            NO_CONC,
        ),
    ],
)
def test_both_predictors_refuse_a_row_without_concurrency_or_layout(
    row: MeasuredRow, reason: str
) -> None:
    for predict in (predict_row, simulate_measured_row):
        with pytest.raises(ConfigError, match=reason):
            predict(row)


@pytest.mark.parametrize("simulate", [False, True])
def test_unspecified_rows_are_skipped_and_the_others_predicted(
    tmp_path: Path, simulate: bool
) -> None:
    path = _write(tmp_path / "m.csv", [AGG, DISAGG, *(dict(r, id=i) for i, r, _ in BAD)])
    kw = {"predictor": simulate_row} if simulate else {}
    preds: list = []
    rep = run_accuracy(path, collect=preds, **kw)
    assert sorted(p.row.row_id for p in preds) == ["ok", "pd"]
    assert rep["predicted"] == 2 and rep["skipped"] == len(BAD)
    for want in {reason for _, _, reason in BAD}:  # each bad row counted under its reason
        n = sum(s["rows"] for s in rep["skipped_reasons"] if want in s["reason"])
        assert n == sum(reason == want for _, _, reason in BAD), want
    rep = run_accuracy(path, mode="disagg", **kw)  # a mode filter keeps its own rows only
    assert rep["predicted"] == 1 and rep["skipped"] == 4


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown mode 'bogus'; known: agg, disagg"):
        run_accuracy("never-read.csv", mode="bogus")


@pytest.mark.parametrize("simulate", [False, True])
@pytest.mark.parametrize("tpot_cell", ["", "0", "12.5"])
def test_one_token_rows_are_judged_on_ttft_only(
    tmp_path: Path, simulate: bool, tpot_cell: str
) -> None:
    # OSL 1 (a prefill-only benchmark): no inter-token time exists, clients report none / 0
    one = dict(AGG, id="one", osl="1", silicon_tpot_ms=tpot_cell)
    path = _write(tmp_path / "m.csv", [AGG, one])
    preds: list = []
    kw = {"predictor": simulate_row} if simulate else {}
    rep = run_accuracy(path, collect=preds, **kw)
    assert rep["predicted"] == 2 and rep["skipped"] == 0
    by_id = {p.row.row_id: p for p in preds}
    p = by_id["one"]
    assert p.ttft_ms > 0 and math.isnan(p.tpot_ms) and math.isnan(p.tpot_ape)
    stats = rep["agg"]["overall"]
    assert stats["ttft_ape"]["n"] == 2 and stats["tpot_ape"]["n"] == 1  # TPOT of "ok" only
    rec = prediction_record(p)
    assert rec["measured_tpot_ms"] is None and rec["tpot_ape"] is None
    assert rec["ttft_ape"] == pytest.approx(p.ttft_ape, abs=0.01)


def test_a_row_whose_request_cannot_fit_says_by_how_much(tmp_path: Path) -> None:
    # 8B on one H100 holds ~0.5M KV tokens; a 2M-token request cannot run: said with numbers
    row = replace(_row(1, Layout(tp=1)), isl=2_000_000)
    with pytest.raises(ConfigError, match=r"needs KV for 2,000,128 tokens .* short by [\d,]+"):
        simulate_measured_row(row)


@pytest.mark.parametrize("predict", [predict_row, simulate_measured_row])
def test_rows_report_how_full_their_clients_would_fill_the_kv_pool(predict: object) -> None:
    # 8B BF16 on one H100 holds ~0.4-0.5M KV tokens: 4 clients of 1,152 tokens use ~1 %,
    # 512 clients of 9,000 tokens (4.6M) overfill it ~10x
    light = predict(_row(4, Layout(tp=1)))  # type: ignore[operator]
    heavy = predict(replace(_row(512, Layout(tp=1)), isl=8000, osl=1000))  # type: ignore[operator]
    assert 0.005 < light.kv_use < 0.02
    assert heavy.kv_use > 5
    assert light.kv_tokens == heavy.kv_tokens > 0  # a full-attention model: one pool size
    assert prediction_record(heavy)["kv_use"] == pytest.approx(heavy.kv_use, abs=1e-3)
