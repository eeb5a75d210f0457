"""A named pipe (mkfifo) given as an output file gets the whole output: checking that the
path is writable must not open the pipe (that blocks until a reader comes, then hands the
reader an end-of-file before the real output, and the command hangs on a pipe nobody reads)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def _drain(fifo: Path, got: list[bytes]) -> threading.Thread:
    """Read `fifo` to its end in a thread; the bytes land in got[0]."""

    def run() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _simulate(n: int) -> list[str]:
    """`pdplan simulate` on two TP1 H100 instances of Llama-3.1-8B, n Poisson requests."""
    return [
        *"simulate --model llama-3.1-8b --gpu h100 --deployment tp1x2 --workload".split(),
        f"poisson:rate=5,n={n},isl=256,osl=16",
    ]


def _cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pdplan.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_workload_synth_into_a_fifo_writes_every_request(tmp_path: Path) -> None:
    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    res = _cli(["workload", "synth", "--out", str(fifo), "--requests", "50"])
    reader.join(30)
    assert res.returncode == 0, res.stderr
    assert got and got[0].count(b"\n") == 50


def test_simulate_outputs_into_fifos(tmp_path: Path) -> None:
    fifos = {
        flag: tmp_path / name
        for flag, name in [
            ("--requests-out", "r.csv"),
            ("--timeline-out", "t.csv"),
            ("--chrome-trace", "c.json"),
        ]
    }
    got: dict[str, list[bytes]] = {flag: [] for flag in fifos}
    readers = []
    for flag, path in fifos.items():
        os.mkfifo(path)
        readers.append(_drain(path, got[flag]))
    args = _simulate(40)
    for flag, path in fifos.items():
        args += [flag, str(path)]
    res = _cli(args)
    for t in readers:
        t.join(30)
    assert res.returncode == 0, res.stderr
    assert got["--requests-out"][0].count(b"\n") == 41  # header + 40 requests
    assert got["--timeline-out"][0].count(b"\n") > 1
    assert got["--chrome-trace"][0].lstrip().startswith((b"{", b"["))


def test_a_fifo_without_write_permission_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anything")
    fifo = tmp_path / "ro.jsonl"
    os.mkfifo(fifo, 0o444)
    res = _cli(["workload", "synth", "--out", str(fifo), "--requests", "5"])
    assert res.returncode != 0
    assert "cannot write --out" in res.stderr


def test_parquet_outputs_are_written_in_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--requests-out .parquet is cut into row groups (the writer holds one at a time) and
    reads back row for row as the CSV of the same run."""
    import pyarrow.csv as pc
    import pyarrow.parquet as pq

    import pdplan.cli._simulate_report as report
    from pdplan.cli import main

    monkeypatch.setattr(report, "ROW_GROUP_ROWS", 16)
    pq_out, csv_out = tmp_path / "r.parquet", tmp_path / "r.csv"
    base = _simulate(100)
    assert main([*base, "--requests-out", str(pq_out)]) == 0
    assert main([*base, "--requests-out", str(csv_out)]) == 0
    f = pq.ParquetFile(pq_out)
    assert f.metadata.num_rows == 100 and f.metadata.num_row_groups == 7  # ceil(100 / 16)
    a, b = f.read().to_pydict(), pc.read_csv(csv_out).to_pydict()
    assert list(a) == list(b)
    for k in ("arrival", "ttft", "p_inst", "state"):
        assert [str(x) for x in a[k]] == [str(x) for x in b[k]], k
