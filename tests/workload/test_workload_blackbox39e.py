"""Workload, thirty-ninth (semantic) black-box pass, part e: the numbers are right.

Statistics of the real traces recomputed with numpy from the raw files, synthetic traffic
against its spec (rate, CV, length mean vs median, curves), and lossless round trips."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pdplan.workload import read_workload, synthesize, workload_stats, write_workload
from pdplan.workload.curves import parse_rate_curve


def _gap_stats(t: np.ndarray) -> tuple[float, float, float]:
    """(span s, (n - 1) / span req/s, population std / mean of the gaps)."""
    g = np.diff(t)
    return float(t[-1] - t[0]), (len(t) - 1) / float(t[-1] - t[0]), float(g.std() / g.mean())


@pytest.mark.parametrize(
    ("spec", "horizon", "mean"),
    [
        ("points:0=0,30m=0,30m=1", 3600.0, 0.5),  # a step up at 30 min
        ("points:0=3,1h=3,1h=1", 7200.0, 2.0),  # a step down at 1 h
        ("points:0=1,1h=3", 7200.0, 2.5),  # a ramp, then held
        ("points:10m=2,20m=4", 3600.0, 3.5),  # held at 2 before the first point
        ("points:0=1,3h=4", 3600.0, 1.5),  # cut inside a ramp
    ],
)
def test_points_curve_mean_is_exact_at_steps(spec: str, horizon: float, mean: float) -> None:
    curve = parse_rate_curve(spec)
    assert curve is not None
    assert curve.mean(horizon) == pytest.approx(mean, rel=1e-12)


def test_a_stepped_points_curve_keeps_the_mean_rate() -> None:
    # before the fix the step averaged 0.75, so the rate after 30 min was 13.3, not 20 req/s
    w = synthesize(duration_s="1h", rate=10.0, rate_curve="points:0=0,30m=0,30m=1", seed=3)
    params = w.meta["params"]
    assert isinstance(params, dict) and params["rate_curve_scale"] == pytest.approx(2.0)
    assert w.arrival_s is not None
    late = int(np.count_nonzero(w.arrival_s >= 1800.0))
    assert abs(late - 36000) < 5 * math.sqrt(36000)  # 20 req/s over 1800 s, 5 sigma
    assert np.count_nonzero(w.arrival_s < 1799.0) == 0  # no traffic while the curve is 0


def test_parquet_epoch_nanosecond_integers_are_read(tmp_path: Path) -> None:
    base = 1_700_000_000_000_000_000  # ns since 1970, past 2**53: the cast refused it
    offsets = [0, 1_000_000, 3_000_000_000, 5_000_000_000]  # ns
    path = tmp_path / "epoch.parquet"
    t = pa.array([base + o for o in offsets], pa.int64())
    pq.write_table(pa.table({"t": t, "a": [1, 2, 3, 4], "b": [1, 1, 1, 1]}), path)
    w = read_workload(path, mapping="input=a,output=b,time=t,time_unit=ns")
    assert w.arrival_s is not None
    np.testing.assert_allclose(w.arrival_s, np.array(offsets) / 1e9, atol=1e-6)


def test_lognormal_mean_is_the_mean_not_the_median() -> None:
    w = synthesize(n=200_000, rate=5.0, input="lognormal:2000:0.8", output="uniform:10:500")
    x = w.input_len.astype(np.float64)
    assert x.mean() == pytest.approx(2000.0, rel=0.01)
    assert np.median(x) == pytest.approx(2000.0 * math.exp(-(0.8**2) / 2), rel=0.01)
    assert np.log(x).std() == pytest.approx(0.8, rel=0.01)
    assert w.output_len.min() == 10 and w.output_len.max() == 500  # inclusive bounds
    assert w.output_len.mean() == pytest.approx(255.0, rel=0.01)


@pytest.mark.parametrize(("arrival", "cv"), [("poisson", 1.0), ("gamma", 0.5), ("gamma", 3.0)])
def test_realised_rate_and_cv(arrival: str, cv: float) -> None:
    w = synthesize(n=200_000, rate=8.0, arrival=arrival, cv=cv, seed=11)
    assert w.arrival_s is not None
    _, rate, got_cv = _gap_stats(w.arrival_s)
    assert rate == pytest.approx(8.0, rel=0.03)
    assert got_cv == pytest.approx(cv, rel=0.03)
    s = workload_stats(w)
    assert s["mean_rate_rps"] == pytest.approx(rate, rel=1e-9)
    assert s["interarrival_cv"] == pytest.approx(got_cv, rel=1e-9)


def test_diurnal_hourly_counts_follow_one_minus_amp_cos() -> None:
    w = synthesize(duration_s="24h", rate=2.0, rate_curve="diurnal:24h:0.5", seed=5)
    assert w.arrival_s is not None
    counts = np.bincount((w.arrival_s // 3600).astype(int), minlength=24)[:24]
    k = np.arange(24)
    w_rad = 2 * np.pi / 86400.0  # rad/s of a 24 h period
    # integral of 2 * (1 - 0.5 cos(w t)) over hour k
    exp = 2.0 * (3600 - 0.5 / w_rad * (np.sin(w_rad * (k + 1) * 3600) - np.sin(w_rad * k * 3600)))
    assert np.all(np.abs(counts - exp) < 5 * np.sqrt(exp))


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    kw: dict[str, object] = dict(n=3000, rate=4.0, arrival="gamma", cv=2.0, seed=7)
    kw.update(input="lognormal:900:1.0", output="uniform:1:64", rate_curve="diurnal:1h:0.3")
    for ext in ("jsonl", "csv", "parquet", "csv.gz"):
        a, b = tmp_path / "a", tmp_path / "b"
        a.mkdir(exist_ok=True), b.mkdir(exist_ok=True)
        write_workload(synthesize(**kw), a / f"t.{ext}")  # type: ignore[arg-type]
        write_workload(synthesize(**kw), b / f"t.{ext}")  # type: ignore[arg-type]
        assert (a / f"t.{ext}").read_bytes() == (b / f"t.{ext}").read_bytes(), ext


def _mooncake(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.open()]


def test_mooncake_stats_recomputed(traces: Path) -> None:
    path = traces / "mooncake_fast25" / "conversation_trace.jsonl"
    rows = _mooncake(path)
    s = workload_stats(read_workload(path))
    t = np.array([r["timestamp"] for r in rows], dtype=np.float64) / 1000.0  # ms -> s
    span, rate, cv = _gap_stats(t)
    assert s["requests"] == len(rows) == 12031
    assert s["span_s"] == pytest.approx(span) and s["mean_rate_rps"] == pytest.approx(rate)
    assert s["interarrival_cv"] == pytest.approx(cv)
    inp = np.array([r["input_length"] for r in rows])
    got = s["input"]
    assert isinstance(got, dict)
    assert got["mean"] == pytest.approx(inp.mean()) and got["total"] == int(inp.sum())
    assert got["p99"] == pytest.approx(np.percentile(inp, 99))
    seen: set[int] = set()
    blocks = reused = 0
    for r in rows:
        ids = r["hash_ids"]
        assert isinstance(ids, list)
        for h in ids:
            blocks, reused = blocks + 1, reused + (h in seen)
            seen.add(h)
    assert s["prefix"] == {"blocks": blocks, "reused_blocks": reused,
                           "reuse_ratio": reused / blocks, "lru_blocks": None,
                           "block_tokens": 512}  # fmt: skip


def test_azure_matches_trace_stats_csv(traces: Path) -> None:
    import csv

    table = {r["trace"]: r for r in csv.DictReader((traces / "trace_stats.csv").open())}
    for name in ("code", "conv"):
        ref = table[f"azure2023_{name}"]
        s = workload_stats(read_workload(traces / "azure_llm_2023" / ref["file"].split("/")[1]))
        assert s["requests"] == int(ref["requests"])
        assert s["span_s"] == pytest.approx(float(ref["duration_s"]), abs=1e-3)
        assert s["mean_rate_rps"] == pytest.approx(float(ref["mean_rate_rps"]), abs=1e-4)
        assert s["interarrival_cv"] == pytest.approx(float(ref["interarrival_cv"]), abs=1e-3)
        for role, key in (("input", "in"), ("output", "out")):
            d = s[role]
            assert isinstance(d, dict)
            assert d["p90"] == pytest.approx(float(ref[f"{key}_p90"]))
            assert d["total"] == int(ref[f"total_{key}_tokens"])


def test_round_trip_keeps_every_column(tmp_path: Path, traces: Path) -> None:
    src = read_workload(traces / "mooncake_fast25" / "synthetic_trace.jsonl")
    prev = src
    for name in ("a.parquet", "b.csv.gz", "c.jsonl.gz", "d.csv", "e.jsonl"):
        write_workload(prev, tmp_path / name)
        w = read_workload(tmp_path / name)
        assert np.array_equal(w.input_len, src.input_len), name
        assert np.array_equal(w.output_len, src.output_len), name
        assert w.arrival_s is not None and src.arrival_s is not None
        assert np.array_equal(np.round(w.arrival_s * 1e3, 3), np.round(src.arrival_s * 1e3, 3))
        assert np.array_equal(w.hash_ids, src.hash_ids), name  # type: ignore[arg-type]
        assert np.array_equal(w.hash_offsets, src.hash_offsets), name  # type: ignore[arg-type]
        prev = w
    before, after = workload_stats(src), workload_stats(prev)
    for key in ("requests", "span_s", "input", "output", "prefix", "joint_histogram"):
        assert before[key] == after[key], key
