"""CLI black-box pass 27 on `pdplan simulate`'s output files and run control on large runs:
the Chrome trace is streamed (the same bytes as json.dumps of chrome_trace()), the request
table's label columns are taken by code (the same rows), a file appears complete or not at
all (Ctrl-C or a failed write mid-file leaves no truncated file), Ctrl-C ends with one line
and exit 130, and the progress bar stays off stdout."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import pdplan.cli.simulate as sim_cli
from pdplan.cli import main
from pdplan.cli._paths import replaced_on_success
from pdplan.sim import SimResult

BASE = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100"]
# prompts up to 900k tokens: some too long for any KV pool (dropped: no instance, state
# 'dropped'), a role switch (an instant event) and speculative decoding (fractional steps)
DISAGG = [
    *BASE, "--deployment", "1P:tp1+2D:tp1", "--workload",
    "poisson:rate=20,n=200,isl=uniform:100:900000,osl=64", "--switch", "3:decode1:prefill",
    "--spec-decode", "eagle:3",
]  # fmt: skip
AGG = [*BASE, "--deployment", "tp1x2", "--workload", "poisson:rate=5,n=200,isl=512,osl=64"]


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch) -> SimResult:
    """Run the CLI, returning the SimResult its writer was given."""
    seen: list[SimResult] = []
    real = sim_cli.write

    def spy(res: SimResult, o: dict[str, Any]) -> None:
        seen.append(res)
        real(res, o)

    monkeypatch.setattr(sim_cli, "write", spy)
    assert main([*args, "--json"]) == 0
    return seen[0]


def test_the_streamed_chrome_trace_is_json_dumps_of_chrome_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.json"
    res = _run([*DISAGG, "--chrome-trace", str(out)], monkeypatch)
    capsys.readouterr()
    expected = res.chrome_trace()
    assert out.read_text() == json.dumps(expected)  # byte for byte, as before the streaming
    kinds = {e["name"] for e in expected["traceEvents"]}
    assert {"prefill", "decode", "becomes prefill", "thread_name"} <= kinds
    steps = [e["args"]["tokens_or_steps"] for e in expected["traceEvents"] if e["ph"] == "X"]
    assert any(isinstance(n, float) for n in steps)  # spec-decode's fractional step counts


def test_chunks_join_into_valid_json_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pdplan.sim.chrome as chrome

    monkeypatch.setattr(chrome, "CHUNK_EVENTS", 7)  # many chunks: every separator is tested
    out = tmp_path / "t.json"
    res = _run([*DISAGG, "--chrome-trace", str(out)], monkeypatch)
    capsys.readouterr()
    assert json.loads(out.read_text()) == json.loads(json.dumps(res.chrome_trace()))
    assert len(list(res.chrome_trace_json())) > 3


def test_numbers_are_written_as_json_writes_them() -> None:
    from pdplan.sim.chrome import trace_json

    steps = [(0, "decode", np.float64(0.1), 0.2, 3, 2), (1, "prefill", 1.0, float("inf"), 5, 0)]
    text = "".join(trace_json([{"name": "m"}], steps, []))
    assert '"ts": 100000.0' in text  # not numpy's repr, 'np.float64(100000.0)'
    as_dicts = [
        {"name": k, "ph": "X", "pid": 0, "tid": i, "ts": t * 1e6, "dur": d * 1e6,
         "args": {"tokens_or_steps": n, "batch": b}}
        for i, k, t, d, n, b in steps
    ]  # fmt: skip
    assert text == json.dumps({"traceEvents": [{"name": "m"}, *as_dicts], "displayTimeUnit": "ms"})


@pytest.mark.parametrize("args", [DISAGG, AGG], ids=["disagg", "agg"])
@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_request_rows_are_request_table_with_labels(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    ext: str,
) -> None:
    out = tmp_path / f"r.{ext}"
    res = _run([*args, "--requests-out", str(out)], monkeypatch)
    capsys.readouterr()
    want = res.request_table(labels=True)
    if ext == "parquet":
        got = {k: list(v) for k, v in pq.read_table(out).to_pydict().items()}
    else:
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        got = {k: [r[k] for r in rows] for k in want}
    assert list(got) == list(want) and len(got["id"]) == res.n_requests
    for k in ("p_inst", "d_inst", "state"):
        assert got[k] == [str(x) for x in want[k]], k
    assert "" in got["d_inst"] or "" in got["p_inst"]  # index -1 (none) reads ''


def test_a_write_that_fails_midway_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    with pytest.raises(KeyboardInterrupt), replaced_on_success(str(out)) as tmp:
        Path(tmp).write_text("id,arrival\n0,")  # half a file, then Ctrl-C
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []  # neither r.csv nor the temporary file
    out.write_text("old\n")
    with pytest.raises(OSError), replaced_on_success(str(out)) as tmp:
        Path(tmp).write_text("new, trunc")
        raise OSError("disk full")
    assert out.read_text() == "old\n" and os.listdir(tmp_path) == ["r.csv"]
    with replaced_on_success(str(out)) as tmp:
        Path(tmp).write_text("new\n")
    assert out.read_text() == "new\n" and os.listdir(tmp_path) == ["r.csv"]


def test_a_link_is_followed_and_a_device_written_in_place(tmp_path: Path) -> None:
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with replaced_on_success(str(link)) as tmp:
        Path(tmp).write_text("new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o640  # its mode kept
    with replaced_on_success(os.devnull) as tmp:
        assert tmp == os.devnull  # never renamed over a device


def test_ctrl_c_while_writing_says_so_and_leaves_no_trace_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(self: SimResult):  # type: ignore[no-untyped-def]
        yield '{"traceEvents": ['
        raise KeyboardInterrupt

    monkeypatch.setattr(SimResult, "chrome_trace_json", interrupted)
    out, rows = tmp_path / "t.json", tmp_path / "r.csv"
    args = [*AGG, "--requests-out", str(rows), "--chrome-trace", str(out), "--json"]
    assert main(args) == 130
    err = capsys.readouterr().err
    assert "interrupted (Ctrl-C)" in err and "Traceback" not in err
    assert not out.exists()  # no half-written trace
    assert sorted(os.listdir(tmp_path)) == ["r.csv"]  # the finished file, no temporaries


def test_ctrl_c_during_the_simulation_exits_130_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sim_cli, "simulate", interrupted)
    assert main([*AGG, "--json"]) == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines()[-1] == "interrupted (Ctrl-C): stopped before the end"


def test_a_piped_table_has_no_progress_bar_residue(capsys: pytest.CaptureFixture[str]) -> None:
    # the bar drew on stdout: a piped run's table began with its stray blank line
    assert main(AGG) == 0
    out = capsys.readouterr().out
    assert out.lstrip(" ").startswith("simulate tp1x2") and "simulating" not in out
