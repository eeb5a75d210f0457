"""`pdplan calibrate` (pass 39h): the written overlay keeps the --efficiency-file it ran under,
duplicated rows and starting values outside the bounds are warned about, skipped rows say
why, and an efficiency file giving a key twice is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.plan._synth39 import write_synthetic

from pdplan.cli import main
from pdplan.errors import InputError
from pdplan.perf.efficiency_file import load_efficiency_file

pytest.importorskip("scipy")

# an overlay with a field the fit leaves alone (step_s, the synthetic rows' truth), a per-GPU
# block on the rows' GPU and on another, and another engine's block: all must survive
OVERLAY = """\
engines:
  vllm:
    step_s: 0.003
    gpus:
      h100:
        attn_eta: 0.6
        mem_eta: 0.9
      b200:
        gemm_eta: 0.7
  sglang:
    mem_eta: 0.7
"""


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    rc = main([*args, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cal39h")
    write_synthetic(d / "m.csv", {"mem_eta": 0.7, "step_s": 3e-3})
    (d / "f.yaml").write_text(OVERLAY)
    return d


def _medians(rep: dict[str, Any]) -> tuple[float, float]:
    return rep["ttft"]["median"], rep["tpot"]["median"]


@pytest.mark.parametrize("gpu", [None, "h100"])
def test_the_written_overlay_keeps_the_given_one_and_reproduces_the_fit(
    capsys: pytest.CaptureFixture[str], files: Path, gpu: str | None
) -> None:
    m, f, out = str(files / "m.csv"), str(files / "f.yaml"), str(files / f"out{gpu}.yaml")
    on = ["--gpu", gpu] if gpu else []
    args = ["calibrate", "--measured", m, "--params", "mem_eta", "--no-holdout", "--out", out]
    rep = _json(capsys, "--efficiency-file", f, *args, *on)
    text = Path(out).read_text()
    assert f"# merged into --efficiency-file {f}" in text
    vllm = yaml.safe_load(text)["engines"]["vllm"]
    assert vllm["step_s"] == 0.003 and vllm["gpus"]["b200-sxm"] == {"gemm_eta": 0.7}
    assert yaml.safe_load(text)["engines"]["sglang"] == {"mem_eta": 0.7}
    h100 = vllm["gpus"]["h100-sxm"]
    if gpu:  # the fitted value in the GPU's block, beside the overlay's own
        assert h100["attn_eta"] == 0.6 and h100["mem_eta"] == pytest.approx(0.7, abs=0.02)
    else:  # the fit set mem_eta on the h100 rows: the block's own would override it
        assert h100 == {"attn_eta": 0.6} and "h100-sxm.mem_eta dropped" in text
    acc = _json(capsys, "--efficiency-file", out, "accuracy", "--measured", m, "--mode", "agg")
    got = acc["agg"]["overall"]
    want = _medians(rep["after"])
    assert (got["ttft_ape"]["median"], got["tpot_ape"]["median"]) == pytest.approx(want, abs=0.01)


def test_duplicated_rows_are_counted_and_warned_about(
    capsys: pytest.CaptureFixture[str], files: Path
) -> None:
    lines = (files / "m.csv").read_text().splitlines(keepends=True)
    copies = [lines[2].replace("r1,", "r91,", 1), lines[3].replace("r2,", "r92,", 1)]
    path = files / "dup.csv"
    path.write_text("".join(lines + copies))
    rep = _json(capsys, "calibrate", "--measured", str(path), "--params", "mem_eta")
    assert rep["rows"] == 10 and rep["duplicates"] == {"rows": 2, "example": "r91 = r1"}
    assert any("2 rows repeat an earlier row exactly" in w for w in rep["warnings"])
    plain = _json(capsys, "calibrate", "--measured", str(files / "m.csv"), "--params", "mem_eta")
    assert plain["duplicates"]["rows"] == 0
    assert not any("repeat" in w for w in plain["warnings"])


def test_skipped_rows_say_why_in_the_table_and_the_json(
    capsys: pytest.CaptureFixture[str], files: Path
) -> None:
    lines = (files / "m.csv").read_text().splitlines(keepends=True)
    tp3 = lines[1].replace("r0,", "r80,", 1).replace(",,1,2,1,,2,1,", ",,1,3,1,,3,1,", 1)
    assert tp3 != lines[1].replace("r0,", "r80,", 1)
    path = files / "skip.csv"
    path.write_text("".join([*lines, tp3, "bad,row\n"]))
    args = ["calibrate", "--measured", str(path), "--params", "mem_eta", "--no-holdout"]
    rep = _json(capsys, *args)
    assert rep["skipped"] == 2
    by = {s["example"].split(" ")[0]: s for s in rep["skipped_reasons"]}
    assert set(by) == {"r80", "line"} and all(s["rows"] == 1 for s in by.values())
    assert "unreadable row" in by["line"]["reason"] and "does not divide" in by["r80"]["reason"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"skipped 1: {by['r80']['reason']} (e.g. r80)" in " ".join(out.split())
    path.write_text(lines[0] + tp3)  # nothing left to fit: the error says why
    assert main(args) == 2
    assert "skipped 1: layout tp3" in capsys.readouterr().err


def test_a_key_given_twice_in_an_efficiency_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("engines:\n  vllm:\n    mem_eta: 0.7\n    step_s: 0.001\n    mem_eta: 0.8\n")
    with pytest.raises(InputError, match=r"dup\.yaml:5: key 'mem_eta' given twice"):
        load_efficiency_file(str(path))
    path.write_text("engines:\n  vllm: {gpus: {h100: {mem_eta: 0.7}, h100: {mem_eta: 0.8}}}\n")
    with pytest.raises(InputError, match="key 'h100' given twice"):
        load_efficiency_file(str(path))
    assert main(["--efficiency-file", str(path), "gpus"]) == 2
    assert "given twice" in capsys.readouterr().err


def test_a_start_outside_the_bounds_is_warned_about(
    capsys: pytest.CaptureFixture[str], files: Path
) -> None:
    over = files / "high.yaml"
    over.write_text("engines:\n  vllm:\n    mem_eta: 0.95\n")
    m = str(files / "m.csv")
    args = ["calibrate", "--measured", m, "--params", "mem_eta", "--no-holdout"]
    rep = _json(capsys, "--efficiency-file", str(over), *args)
    hit = [w for w in rep["warnings"] if w.startswith("mem_eta starts at 0.95")]
    assert len(hit) == 1 and "upper bound 0.92" in hit[0]
    assert not any("starts at" in w for w in _json(capsys, *args)["warnings"])
