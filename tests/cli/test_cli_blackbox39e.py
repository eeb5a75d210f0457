"""CLI, thirty-ninth (semantic) black-box pass, part e: `pdplan workload synth` realises a
stepped `--curve points:` at the asked mean rate, `inspect` reads epoch-ns Parquet times,
and `synth --help` says what lognormal's MEAN and SIGMA are."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.cli_json import cli_json as _json

from pdplan.cli import main


def test_synth_stepped_curve_mean_rate(tmp_path: Path) -> None:
    out = tmp_path / "t.parquet"
    d = _json("workload", "synth", "--duration", "1h", "--rate", "10", "--curve",
              "points:0=0,30m=0,30m=1", "--out", out, "--json")  # fmt: skip
    t = pq.read_table(out).column("timestamp").to_numpy() / 1000.0  # ms -> s
    assert d["requests"] == len(t)
    assert len(t) / 3600.0 == pytest.approx(10.0, rel=0.05)  # was 6.7 req/s
    assert np.count_nonzero(t >= 1800.0) / 1800.0 == pytest.approx(20.0, rel=0.05)


def test_inspect_parquet_epoch_ns(tmp_path: Path) -> None:
    path = tmp_path / "epoch.parquet"
    base = 1_700_000_000_000_000_000  # ns
    t = pa.array([base, base + 2_000_000_000, base + 4_000_000_000], pa.int64())
    pq.write_table(pa.table({"t": t, "a": [5, 6, 7], "b": [1, 2, 3]}), path)
    d = _json("workload", "inspect", path, "--map", "input=a,output=b,time=t,time_unit=ns",
              "--json")  # fmt: skip
    assert d["span_s"] == pytest.approx(4.0, abs=1e-6)
    assert d["mean_rate_rps"] == pytest.approx(0.5, rel=1e-6)


def test_synth_help_defines_lognormal_mean() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        with contextlib.suppress(SystemExit):
            main(["workload", "synth", "--help"])
    text = " ".join(out.getvalue().replace("│", " ").split())
    assert "not the median" in text and "ln(length)" in text
