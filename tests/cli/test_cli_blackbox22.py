"""CLI black-box pass 22 on `pdplan accuracy`: the noise floor keys setups by the decoding
predicted, blank setup columns are named, --mode's left-out rows are counted, --rows columns
are documented with units."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pdplan.cli import main
from pdplan.cli.accuracy import ROWS_HELP

HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,"
    "osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
    "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
)
LLAMA = "trtllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1024,128,,,8,1,1,,1,1"
# Qwen3.5-397B FP8 on B300 at TP4 / EP1, 4 clients (figures made up, not the shared file's)
QWEN = "Qwen/Qwen3.5-397B-A17B,b300_sxm,fp8,agg,1024,1024,fp8,fp8_block,4,4,1,1,4,1"
# an InferenceMAX note (wip=) naming SGLang's v0.5.9-cu130 image: the qwen3.5 MTP recipe
MTP_NOTE = "wip=True; image=lmsysorg/sglang:v0.5.9-cu130"


def _write(tmp_path: Path, lines: list[str]) -> Path:
    f = tmp_path / "m.csv"
    f.write_text(HEADER + "".join(line + "\n" for line in lines))
    return f


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["accuracy", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_recipes_mtp_run_is_not_a_repeat_of_the_plain_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one layout, two launches: the MTP recipe (TPOT 5.3 ms) and a plain run (8.6 ms); the
    # predictor prices them apart, so their spread is no floor it cannot beat (it was read as
    # one setup measured twice: 1 setup, TPOT 27 % from the geometric mean)
    f = _write(
        tmp_path,
        [f"mtp,{MTP_NOTE},sglang,0.5.9,{QWEN},190,5.3", f"plain,,sglang,0.5.10,{QWEN},205,8.6"],
    )
    rep = _json(["--measured", str(f)], capsys)
    assert set(rep["agg"]["by_decoding"]) == {"mtp:3:0.7", "plain"}
    assert rep["agg"]["repeats"]["setups"] == 0
    # two plain runs of the same layout still are repeats
    f = _write(tmp_path, [f"a,,sglang,0.5.10,{QWEN},205,8.6", f"b,,sglang,0.5.10,{QWEN},225,9"])
    assert _json(["--measured", str(f)], capsys)["agg"]["repeats"]["setups"] == 1


@pytest.mark.parametrize("column", ["backend", "model_path", "system"])
def test_a_blank_setup_column_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str
) -> None:
    # a blank model read as config.json folder '' ("no config.json in "), a blank GPU as
    # "unknown GPU ''": neither said which cell was empty
    names = ("backend", "version", "model_path", "system")
    cells = dict(zip(names, LLAMA.split(",")[:4], strict=True))
    cells[column] = ""
    rest = ",".join(LLAMA.split(",")[4:])
    f = _write(tmp_path, [f"r0,,{','.join(cells.values())},{rest},100,8", f"r1,,{LLAMA},100,8"])
    rep = _json(["--measured", str(f)], capsys)
    assert rep["predicted"] == 1
    assert [s["reason"] for s in rep["skipped_reasons"]] == [f"unreadable row: {column} is empty"]


def test_rows_left_out_by_mode_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    disagg = LLAMA.replace(",agg,", ",disagg,")
    f = _write(tmp_path, [f"a,,{LLAMA},100,8", f"d1,,{disagg},100,8", f"d2,,{disagg},100,8"])
    rep = _json(["--measured", str(f), "--mode", "agg"], capsys)
    # every data line is predicted, skipped or left out
    assert (rep["predicted"], rep["skipped"], rep["left_out_by_mode"]) == (1, 0, 2)
    assert main(["accuracy", "--measured", str(f), "--mode", "agg"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "predicted 1 row, skipped 0, left out 2 of the other mode (--mode)" in out


def test_an_unreadable_line_beside_other_mode_rows_is_not_the_only_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # it said "the only row could not be predicted" of a file with three data lines
    disagg = LLAMA.replace(",agg,", ",disagg,")
    f = _write(tmp_path, [f"d1,,{disagg},100,8", f"d2,,{disagg},100,8", "x,y,z"])
    assert main(["accuracy", "--measured", str(f), "--mode", "agg"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "no row could be predicted: 1 skipped (unreadable row" in err
    assert "), 2 not agg left out" in err
    assert "the only row" not in err


def test_every_rows_column_is_documented_with_its_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _write(tmp_path, [f"r0,,{LLAMA},100,8"])
    out = tmp_path / "rows.csv"
    assert main(["accuracy", "--measured", str(f), "--rows", str(out)]) == 0
    with out.open() as fh:
        columns = next(csv.reader(fh))
    text = ROWS_HELP.replace("measured_ / predicted_ ttft_ms and tpot_ms", "")
    for c in columns:
        if c.startswith(("measured_", "predicted_")):
            continue  # named together: measured_ / predicted_ ttft_ms and tpot_ms (ms)
        assert c in text, c
    assert "ttft_ms and tpot_ms (ms" in ROWS_HELP and "% of measured" in ROWS_HELP
    assert "isl / osl (tokens)" in ROWS_HELP
