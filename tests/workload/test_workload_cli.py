"""`pdplan workload ...` end to end through pdplan.cli.main (exit codes, JSON keys, files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_inspect_azure_conv_acceptance(traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = traces / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
    d = _json(capsys, ["workload", "inspect", str(f), "--json"])
    assert d["requests"] == 19366
    inp = d["input"]
    assert isinstance(inp, dict) and round(inp["mean"]) == 1155 and inp["p99"] == 4142.0


def test_inspect_mooncake_windows_and_plot(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = traces / "mooncake_fast25" / "conversation_trace.jsonl"
    png = tmp_path / "w.png"
    d = _json(
        capsys, ["workload", "inspect", str(f), "--window", "15m", "--json", "--plot", str(png)]
    )
    assert d["requests"] == 12031
    assert isinstance(d["prefix"], dict) and 0 < d["prefix"]["reuse_ratio"] < 1
    wins = d["windows"]
    assert isinstance(wins, list) and len(wins) == 4 and wins[0]["rate_rps"] > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_inspect_human_output(traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = traces / "azure_llm_2023" / "AzureLLMInferenceTrace_code.csv"
    assert main(["workload", "inspect", str(f), "--window", "1h"]) == 0
    out = capsys.readouterr().out
    assert "8,819" in out and "per 3600 s window" in out


def test_synth_then_convert_then_inspect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "s.jsonl"
    d = _json(
        capsys,
        [
            "workload",
            "synth",
            "-n",
            "300",
            "--rate",
            "5",
            "--arrival",
            "fixed",
            "--input",
            "uniform:10:20",
            "--output",
            "8",
            "--seed",
            "1",
            "-o",
            str(out),
            "--json",
        ],
    )
    assert d["requests"] == 300 and d["mean_rate_rps"] == pytest.approx(5.0)
    pq = tmp_path / "s.parquet"
    c = _json(capsys, ["workload", "convert", str(out), str(pq), "--json"])
    assert c["requests"] == 300 and c["format"] == "parquet"
    d2 = _json(capsys, ["workload", "inspect", str(pq), "--json"])
    assert d2["output"] == {
        "mean": 8.0,
        "p50": 8.0,
        "p90": 8.0,
        "p99": 8.0,
        "max": 8,
        "total": 2400,
    }


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("ContextTokens,GeneratedTokens\n5,1\n-3,1\nzz,1\n")
    assert main(["workload", "inspect", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and f"{bad}:3: negative length" in err and "\n" not in err
    d = _json(capsys, ["workload", "inspect", str(bad), "--skip-bad", "--json"])
    assert d["skipped_total"] == 2
    assert d["skipped"] == {"negative length": 1, "non-numeric length": 1}
    assert main(["workload", "inspect", str(bad), "--window", "fortnight"]) == 2
    assert (
        main(["workload", "synth", "-n", "5", "--input", "gauss:3", "-o", str(tmp_path / "x")]) == 2
    )


def test_synth_cv_without_gamma_arrivals_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "s.jsonl")
    assert (
        main(["workload", "synth", "-o", out, "-n", "10", "--arrival", "fixed", "--cv", "5"]) == 2
    )
    assert "--arrival gamma" in capsys.readouterr().err
    assert (
        main(["workload", "synth", "-o", out, "-n", "10", "--arrival", "gamma", "--cv", "3"]) == 0
    )
