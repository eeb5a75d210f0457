"""`pdplan workload synth` (pass 40): --out never replaces the trace that --input / --output
'empirical:FILE' resamples (synthesize reads it first, so the write would destroy it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.cli import main

TRACE = '{"timestamp": 0, "input_length": 10, "output_length": 5}\n' * 3


@pytest.mark.parametrize("flag", ["--input", "--output"])
def test_synth_out_never_replaces_its_empirical_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(TRACE)
    rc = main(["workload", "synth", "-o", str(trace), "-n", "10", flag, f"empirical:{trace}"])
    out, err = capsys.readouterr()
    assert rc != 0 and out == ""
    assert err.startswith(f"error: --out {trace} is the {flag} file"), err
    assert trace.read_text() == TRACE


def test_synth_from_an_empirical_source_to_another_file_still_works(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace, out_path = tmp_path / "t.jsonl", tmp_path / "s.jsonl"
    trace.write_text(TRACE)
    args = ["-o", str(out_path), "-n", "4", "--input", f"empirical:{trace}"]
    rc = main(["workload", "synth", *args])
    _, err = capsys.readouterr()
    assert rc == 0, err
    assert len(out_path.read_text().splitlines()) == 4 and trace.read_text() == TRACE
