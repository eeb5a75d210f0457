"""CLI: `pdplan simulate` warnings: a link-bound overload names the KV links, not the busiest
pool; the trace reader's warnings (out-of-order timestamps, hash blocks) reach the user."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.cli import main


def test_a_link_bound_overload_blames_the_kv_links(capsys: pytest.CaptureFixture[str]) -> None:
    # 16 prefill instances push ~1 GB of KV per request into one decode GPU's NIC
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h200", "--deployment",
               "16P:tp1+1D:tp1", "--workload", "poisson:rate=60,n=1500,isl=8000,osl=2",
               "--json"])  # fmt: skip
    _, err = capsys.readouterr()
    assert rc == 0 and "warning: overloaded" in err
    assert "the KV links are full (decode0:tp1's carries" in err and "add decode instances" in err
    assert "add prefill instances" not in err


def test_trace_warnings_reach_the_simulate_user(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"timestamp": 5000, "input_length": 100, "output_length": 10}\n'
        '{"timestamp": 1000, "input_length": 200, "output_length": 10}\n'
    )
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1",
               "--workload", str(trace), "--json"])  # fmt: skip
    _, err = capsys.readouterr()
    assert rc == 0
    assert "timestamps not sorted (1 row goes back in time); sorted by time" in err
    # the replay says what the timestamps give, and their unit (Mooncake / pdplan: ms)
    assert "replaying" in err and "over 4 s" in err and "timestamps read in ms" in err


def _sim(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", *more])
    out, err = capsys.readouterr()
    return rc, out, err


def test_one_file_for_two_outputs_is_refused_before_simulating(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    same = str(tmp_path / "same.csv")
    rc, _, err = _sim(capsys, "--deployment", "tp1", "--workload", "poisson:rate=2,n=20",
                      "--requests-out", same, "--timeline-out", same)  # fmt: skip
    assert rc == 2 and "--requests-out and --timeline-out both name" in err
    assert not Path(same).exists()


def test_swap_with_a_recompute_only_engine_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _sim(capsys, "--deployment", "tp1", "--workload", "poisson:rate=2,n=20",
                      "--engine", "sglang", "--preemption", "swap", "--json")  # fmt: skip
    assert rc == 0 and "SGLang preempts by recompute only" in err
    rc, _, err = _sim(capsys, "--deployment", "tp1", "--workload", "poisson:rate=2,n=20",
                      "--engine", "trtllm", "--preemption", "swap", "--json")  # fmt: skip
    assert rc == 0 and "recompute only" not in err


def test_chunk_keeps_sglang_prefill_first(capsys: pytest.CaptureFixture[str]) -> None:
    # SGLang does not mix prompts into decode steps: --chunk caps its prefill steps, so runs
    # with its default size and without --chunk give the same result (vLLM's would change)
    args = ("--deployment", "tp1", "--workload", "poisson:rate=8,n=300,isl=2000,osl=100",
            "--engine", "sglang", "--json")  # fmt: skip
    import json

    rc, plain, _ = _sim(capsys, *args)
    rc2, chunked, _ = _sim(capsys, *args, "--chunk", "8192")
    assert rc == rc2 == 0
    assert json.loads(plain)["ttft_s"] == json.loads(chunked)["ttft_s"]


def test_seed_changes_a_synthetic_run_and_repeats_it(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    args = ("--deployment", "tp1", "--workload", "poisson:rate=5,n=200,isl=lognormal:1000:0.8",
            "--json")  # fmt: skip
    runs = [json.loads(_sim(capsys, *args, "--seed", s)[1])["ttft_s"] for s in ("0", "1", "1")]
    assert runs[0] != runs[1] and runs[1] == runs[2]


def test_an_output_over_the_input_trace_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_length,output_length\n0,100,10\n50,200,20\n")
    rc, _, err = _sim(capsys, "--deployment", "tp1", "--workload", str(trace),
                      "--requests-out", str(trace))  # fmt: skip
    assert rc == 2 and "--workload and --requests-out both name" in err
    assert trace.read_text().startswith("timestamp,input_length")
