"""Black-box round 14: `workload inspect` of a trace without timestamps (a vidur / ShareGPT
length list) prints its table instead of an internal error; `parallel --layout` without
--gpus lists layouts for that layout's GPU count, not a whole node's; `accuracy`
names a column repeated in the header instead of calling every row one field short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main


def test_inspect_a_trace_without_timestamps_renders(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "lengths.csv"  # the layout of ShareGPT's Sarathi length stats
    trace.write_text(
        "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
        "74,918,992,0.08\n290,905,1195,0.32\n"
    )
    rc = main(["workload", "inspect", str(trace)])
    out, err = capsys.readouterr()
    # was "internal error: TypeError: must be real number, not NoneType" (span_s is None)
    assert rc == 0, err
    assert "internal error" not in err
    assert "- (no timestamps)" in out
    assert "- req/s" not in out  # no rate, so no unit after the dash


def test_parallel_layout_without_gpus_sizes_the_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["parallel", "--model", "llama-3.1-70b", "--gpu", "h100", "--layout", "tp4", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    # was 8 (the node): 8-GPU layouts and the seed rule's tp8 beside tp4's comm table
    assert d["gpus"] == 4
    assert {row["gpus"] for row in d["layouts"]} == {4}
    assert d["seed_rule"]["layout"] == "tp4" and d["comm"]["layout"] == "tp4"


def test_accuracy_names_a_repeated_header_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    head = "id,id,backend,model_path,system,mode,isl,osl,batch_size,tp_size"
    cols = "silicon_ttft_ms,silicon_tpot_ms"
    row = "r1,r1,vllm,Qwen/Qwen3-32B,h100_sxm,agg,1024,128,8,2,150,18"
    csv_file = tmp_path / "dup.csv"
    csv_file.write_text(f"{head},{cols}\n{row}\n")
    assert main(["accuracy", "--measured", str(csv_file)]) == 2
    err = capsys.readouterr().err
    # was "expected 12 comma-separated fields, got 11" for a row that has all 12
    assert "column(s) named more than once in the header: id" in err
    assert "comma-separated fields" not in err
