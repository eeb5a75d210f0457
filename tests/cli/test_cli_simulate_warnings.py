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
    assert "the KV transfers are link-bound" in err and "add decode instances" in err
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
