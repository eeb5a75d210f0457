"""Black-box round 17: `simulate --duration` of 0, negative or NaN is refused before a trace's
replay note claims 'the first 0 s'; `workload inspect` of a Prometheus scrape refuses the
trace-only options it ignored (a --plot exited 0 and wrote nothing); a bad --window names
the flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main

_SIM = ("simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1")
_SCRAPE = """# HELP vllm:request_prompt_tokens Number of prefill tokens processed.
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{le="100.0",model_name="m"} 10
vllm:request_prompt_tokens_bucket{le="1000.0",model_name="m"} 30
vllm:request_prompt_tokens_bucket{le="+Inf",model_name="m"} 40
vllm:request_prompt_tokens_count{model_name="m"} 40
vllm:request_prompt_tokens_sum{model_name="m"} 20000
"""


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("duration", ["0", "-5", "nan"])
def test_a_non_positive_duration_is_refused_before_the_replay_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], duration: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_length,output_length\n0,100,10\n1000,200,20\n")
    rc, _, err = _run(capsys, *_SIM, "--workload", str(trace), "--duration", duration)
    assert rc == 2
    assert f"--duration must be a positive number of seconds, not {float(duration)}" in err
    # was 'note: replaying the first 0 s of t.csv: 0 of its 2 requests' above the error
    assert "replaying" not in err


def test_a_positive_duration_still_cuts_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_length,output_length\n0,100,10\n1000,200,20\n")
    rc, _, err = _run(capsys, *_SIM, "--workload", str(trace), "--duration", "0.5", "--json")
    assert rc == 0 and "1 of its 2 requests" in err


@pytest.mark.parametrize(
    "extra",
    [
        ("--plot", "PLOT"),
        ("--window", "15m"),
        ("--lru-blocks", "5"),
        ("--skip-bad",),
        ("--map", "input=a,output=b"),
    ],
)
def test_inspect_of_a_metrics_scrape_refuses_trace_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...]
) -> None:
    scrape = tmp_path / "m.prom"
    scrape.write_text(_SCRAPE)
    plot = tmp_path / "m.png"
    args = [str(plot) if a == "PLOT" else a for a in extra]
    fmt = ("--format", "prometheus") if extra[0] == "--map" else ()
    rc, _, err = _run(capsys, "workload", "inspect", str(scrape), *fmt, *args)
    # was rc 0, the histograms printed and the option dropped (no image written for --plot)
    assert rc == 2 and f"{extra[0]} applies to a trace file" in err
    assert not plot.exists()


def test_inspect_of_a_metrics_scrape_still_summarises_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scrape = tmp_path / "m.prom"
    scrape.write_text(_SCRAPE)
    rc, out, err = _run(capsys, "workload", "inspect", str(scrape), "--json")
    assert rc == 0, err
    assert '"prompt_tokens"' in out


def test_a_bad_window_names_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_length,output_length\n0,100,10\n1000,200,20\n")
    rc, _, err = _run(capsys, "workload", "inspect", str(trace), "--window", "0")
    assert rc == 2 and "error: --window: duration '0' must be positive" in err


def test_a_replay_in_a_unit_given_by_map_does_not_claim_it_was_detected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "g.csv"
    trace.write_text("t_ms,p,g\n0,100,10\n1000,200,20\n")
    mapping = "input=p,output=g,time=t_ms,time_unit=ms"
    rc, _, err = _run(capsys, *_SIM, "--workload", str(trace), "--map", mapping, "--json")
    assert rc == 0 and "timestamps read in ms" in err
    # was '(format csv, from its columns; if seconds: --format csv --map time_unit=s)': the
    # unit came from --map, and that advice is a --map without input= / output=, refused
    assert "from its columns" not in err and "--format csv" not in err


def test_a_replay_in_a_presets_unit_still_says_how_to_read_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_length,output_length\n0,100,10\n1000,200,20\n")
    rc, _, err = _run(capsys, *_SIM, "--workload", str(trace), "--json")
    assert rc == 0 and "(format mooncake, from its columns; if seconds:" in err


def test_a_duration_cut_of_poisson_arrivals_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    spec = "poisson:rate=20,n=400,isl=100,osl=5"
    rc, out, err = _run(capsys, *_SIM, "--workload", spec, "--duration", "5", "--json")
    assert rc == 0, err
    ran = json.loads(out)["requests"]
    assert 0 < ran < 400
    # was silent: n=400 asked, about 100 run, nothing said on stderr
    assert f"--duration 5 s keeps the {ran:,} of the workload's 400 requests" in err


def test_no_cut_note_when_every_request_arrives_in_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = "poisson:rate=20,n=10,isl=100,osl=5"
    rc, _, err = _run(capsys, *_SIM, "--workload", spec, "--duration", "500", "--json")
    assert rc == 0 and "keeps the" not in err
