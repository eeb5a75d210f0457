"""Black-box round 11: plot and output extensions, BOM / JSON-array / empty-row inputs, rate
curves that keep --rate the mean, readable clipping warnings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pdplan.cli import main
from pdplan.errors import InputError
from pdplan.workload import read_workload, synthesize, workload_stats, write_workload
from pdplan.workload.formats import PRESETS
from pdplan.workload.jsonl_reader import read_jsonl

ROWS = [{"timestamp": i * 100, "input_length": 10 + i, "output_length": 5} for i in range(3)]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc: int, out: str, err: str) -> None:
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), err


def _jsonl(path: Path, rows: list[dict[str, int]] = ROWS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_inspect_refuses_an_unsupported_plot_extension_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-trace.jsonl"  # never read: the --plot path is checked first
    for name, what in (("x.txt", "cannot write '.txt' images"), ("x", "no image extension")):
        rc, out, err = _run(capsys, "workload", "inspect", str(missing), "--plot", name)
        _one_line_error(rc, out, err)
        assert what in err and ".png" in err and ".svg" in err and "internal error" not in err
        assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["o.xlsx", "o.txt", "o.json", "o.parquet.gz", "o"])
def test_convert_and_synth_refuse_unsupported_output_extensions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    src = _jsonl(tmp_path / "s.jsonl")
    dst = tmp_path / name
    rc, out, err = _run(capsys, "workload", "convert", str(src), str(dst))
    _one_line_error(rc, out, err)
    assert ".jsonl, .csv or .parquet" in err and str(dst) in err
    rc, out, err = _run(capsys, "workload", "synth", "-n", "5", "-o", str(dst))
    _one_line_error(rc, out, err)
    assert not dst.exists()


@pytest.mark.parametrize(
    "name", ["o.jsonl", "o.csv", "o.parquet", "o.pq", "o.jsonl.gz", "o.CSV.GZ"]
)
def test_supported_output_extensions_still_round_trip(tmp_path: Path, name: str) -> None:
    w = read_workload(_jsonl(tmp_path / "s.jsonl"))
    write_workload(w, tmp_path / name)
    assert read_workload(tmp_path / name).input_len.tolist() == [10, 11, 12]


def test_jsonl_with_a_utf8_bom_reads(tmp_path: Path) -> None:
    f = tmp_path / "bom.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + _jsonl(tmp_path / "plain.jsonl").read_bytes())
    for fast in (True, False):  # the pyarrow block path and the careful line path
        w = read_jsonl(
            str(f), PRESETS["mooncake"].present(list(ROWS[0])), "mooncake", False, fast=fast
        )
        assert w.input_len.tolist() == [10, 11, 12]
    assert read_workload(f).input_len.tolist() == [10, 11, 12]


@pytest.mark.parametrize("text", [json.dumps(ROWS), json.dumps(ROWS, indent=2), "[]"])
def test_a_json_array_is_refused_as_such(tmp_path: Path, text: str) -> None:
    f = tmp_path / "t.json"
    f.write_text(text)
    for fmt in (None, "jsonl", "mooncake"):
        with pytest.raises(InputError, match="a JSON array; pdplan reads JSON Lines") as e:
            read_workload(f, fmt=fmt)
        assert str(e.value).startswith(str(f))


def test_an_all_empty_csv_row_is_a_malformed_row(tmp_path: Path) -> None:
    f = tmp_path / "e.csv"
    f.write_text("input_length,output_length\n10,5\n,,\n\n20,6\n,\n")
    with pytest.raises(InputError, match=r"e\.csv:3: empty row \(every field empty\)"):
        read_workload(f)
    w = read_workload(f, skip_bad=True)
    assert w.input_len.tolist() == [10, 20]
    assert w.meta["skipped"] == {"empty row (every field empty)": 2}  # lines 3 and 6
    assert w.meta["blank_lines"] == 1  # the truly empty line 4 is not a row


def test_lru_blocks_needs_hash_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _jsonl(tmp_path / "s.jsonl")
    rc, out, err = _run(capsys, "workload", "inspect", str(f), "--lru-blocks", "10")
    _one_line_error(rc, out, err)
    assert "--lru-blocks" in err and "no hash_ids" in err
    rows = [{**r, "hash_ids": [1, 2]} for r in ROWS]
    g = _jsonl(tmp_path / "h.jsonl", rows)
    rc, out, _ = _run(capsys, "workload", "inspect", str(g), "--lru-blocks", "10", "--json")
    assert rc == 0 and json.loads(out)["prefix"]["lru_blocks"] == 10


@pytest.mark.parametrize("kw", [{"duration_s": "2h"}, {"n": 14_400}])
def test_points_curve_keeps_rate_as_the_mean(kw: dict[str, object]) -> None:
    # points:0=1,1h=3 over 2 h has mean 2.5: unscaled, --rate 2 gave 5 req/s
    w = synthesize(rate=2.0, rate_curve="points:0=1,1h=3", arrival="fixed", **kw)
    s = workload_stats(w, window_s=3600)
    assert s["mean_rate_rps"] == pytest.approx(2.0, rel=0.01)
    first, second = (x["rate_rps"] for x in s["windows"][:2])
    assert first == pytest.approx(2.0 / 2.5 * 2.0, rel=0.01)  # ramp 1 -> 3: mean 2 of 2.5
    assert second == pytest.approx(2.0 / 2.5 * 3.0, rel=0.01)


def test_a_points_curve_that_is_zero_over_the_trace_is_refused() -> None:
    with pytest.raises(InputError, match="is 0 over the whole trace"):
        synthesize(duration_s="1h", rate=2.0, rate_curve="points:0=0,1h=0,2h=1")


def test_synth_clipping_is_a_readable_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "c.jsonl"
    argv = ["workload", "synth", "-n", "1000", "--input", "lognormal:2000:0.8:100"]
    rc, out, err = _run(capsys, *argv, "-o", str(out_file))
    assert rc == 0 and "{'input'" not in out
    assert "clipped 1,000 of 1,000 input lengths at 100 tokens" in err  # a warning: stderr
    assert "their mean is 100, not 2,000" in err
    rc, out, _ = _run(capsys, *argv, "-o", str(out_file), "--json")
    d = json.loads(out)
    assert d["clipped"] == {"input": 1000, "output": 0}
    assert any("clipped 1,000 of 1,000 input lengths" in m for m in d["warnings"])
    w = synthesize(n=50, input="fixed:7")
    assert w.meta["warnings"] == [] and np.all(w.input_len == 7)
