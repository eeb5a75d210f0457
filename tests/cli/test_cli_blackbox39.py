"""CLI, thirty-ninth (semantic) black-box pass: the numbers `pdplan simulate` writes agree with
each other and with docs/simulate-outputs.md: the summary recomputed from the per-request rows,
the TTFT decomposition of a disaggregated run, the timeline's KV within its pool, the Chrome
trace's spans against the utilisation and the rows, CSV and Parquet holding the same numbers,
and the client-side first-token delay of a short SGLang output."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from pdplan.cli import main

BASE = ("simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--json")
# KV-tight (mem-fraction 0.3: ~55k tokens per instance) so that the decode instance preempts
DISAGG = ("--deployment", "1P:tp1+1D:tp1", "--mem-fraction", "0.3")
LOAD = "poisson:rate=4,n=150,isl=2000,osl=uniform:1:1500"
HANDOFF_VLLM_S = 0.15  # vLLM's PD hand-off (Efficiency.pd_handoff_s), s
QS = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99.9": 0.999}


def _sim(capsys: pytest.CaptureFixture[str], tmp: Path, ext: str, *args: str) -> dict[str, Any]:
    outs = ("--requests-out", str(tmp / f"r.{ext}"), "--timeline-out", str(tmp / f"t.{ext}"))
    rc = main([*BASE, *args, *outs, "--chrome-trace", str(tmp / "c.json")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def _cols(path: Path) -> dict[str, np.ndarray]:
    t = pq.read_table(path) if path.suffix == ".parquet" else pacsv.read_csv(path)
    return {k: t.column(k).to_numpy(zero_copy_only=False) for k in t.column_names}


def _stats(x: np.ndarray) -> dict[str, float]:
    x = x[np.isfinite(x)]
    return {"mean": float(x.mean()), **{k: float(np.quantile(x, q)) for k, q in QS.items()}}


@pytest.fixture(scope="module")
def disagg(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One KV-tight disaggregated run's summary and output folder (module scope: capsys is
    function-scoped, so stdout is captured here)."""
    tmp = tmp_path_factory.mktemp("bb39")
    outs = ("--requests-out", str(tmp / "r.parquet"), "--timeline-out", str(tmp / "t.parquet"))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(
            [*BASE, *DISAGG, "--workload", LOAD, *outs, "--chrome-trace", str(tmp / "c.json")]
        )
    assert rc == 0
    return json.loads(buf.getvalue()), tmp


def test_summary_is_what_the_rows_say(disagg: tuple[dict[str, Any], Path]) -> None:
    s, tmp = disagg
    r = _cols(tmp / "r.parquet")
    done = r["state"] == "done"
    assert s["preemptions"] > 0 and s["preemptions"] == int(r["preempt"].sum())
    assert len(r["id"]) == s["requests"] == s["finished"] + s["dropped"] + s["unfinished"]
    assert int(done.sum()) == s["finished"]
    d = {k: v[done] for k, v in r.items()}
    for key, col in (("ttft_s", "ttft"), ("tpot_s", "tpot"), ("e2e_s", "e2e"),
                     ("kv_transfer_s", "xfer_s"), ("decode_slot_wait_s", "slot_wait")):  # fmt: skip
        assert s[key] == pytest.approx(_stats(d[col]), rel=1e-9, abs=1e-12), key
    assert s["queue_s"] == pytest.approx(_stats(d["pf_start"] - d["arrival"]), rel=1e-9, abs=1e-12)
    dur = float(np.max(d["finish"]) - np.min(r["arrival"]))
    assert s["duration_s"] == pytest.approx(dur, rel=1e-12)
    assert s["throughput_rps"] == pytest.approx(done.sum() / dur, rel=1e-12)
    assert s["output_tokens_per_s"] == pytest.approx(d["out"].sum() / dur, rel=1e-12)
    one = d["out"] == 1
    good = (d["ttft"] <= s["slo"]["ttft_s"]) & (one | (d["tpot"] <= s["slo"]["tpot_s"]))
    assert s["slo"]["attainment"] == pytest.approx(good.sum() / len(r["id"]), rel=1e-12)
    assert s["goodput_rps"] == pytest.approx(good.sum() / dur, rel=1e-12)
    assert s["goodput_rps"] <= s["throughput_rps"]


def test_rows_hold_their_formulas_and_the_ttft_decomposition(
    disagg: tuple[dict[str, Any], Path],
) -> None:
    s, tmp = disagg
    r = _cols(tmp / "r.parquet")
    d = {k: v[r["state"] == "done"] for k, v in r.items()}
    assert np.all(d["pf_start"] >= d["arrival"]) and np.all(d["pf_end"] >= d["pf_start"])
    assert np.all(d["finish"] >= d["first"])
    assert d["slot_wait"] == pytest.approx(np.maximum(d["xfer_start"] - d["pf_end"], 0))
    ready = np.maximum(d["pf_end"], d["xfer_start"]) + d["xfer_s"] + HANDOFF_VLLM_S
    assert np.all(d["first"] >= ready - 1e-9)  # then the step boundary and the first step
    assert d["ttft"] == pytest.approx(d["first"] - d["arrival"] + d["ttft_overhead"])
    multi = d["out"] > 1
    tpot = (d["finish"] - d["first"])[multi] / (d["out"][multi] - 1)
    assert d["tpot"][multi] == pytest.approx(tpot) and np.all(np.isnan(d["tpot"][~multi]))
    assert d["e2e"] == pytest.approx(np.maximum(d["finish"] - d["arrival"], d["ttft"]))
    gaps = (d["finish"] - d["first"])[multi].sum() / (d["out"][multi] - 1).sum()
    assert s["itl_s"]["mean"] == pytest.approx(gaps, rel=1e-6)


def test_timeline_kv_stays_in_the_pool_and_feeds_the_summary(
    disagg: tuple[dict[str, Any], Path],
) -> None:
    s, tmp = disagg
    t = _cols(tmp / "t.parquet")
    assert np.all(np.diff(t["t_s"]) >= 0)
    grids = {tuple(t["t_s"][t["instance"] == i["index"]]) for i in s["instances"]}
    assert len(grids) == 1  # every instance sampled at the same instants
    for i in s["instances"]:
        mine = t["instance"] == i["index"]
        kv, cap = t["kv_tokens"][mine], i["kv_capacity_tokens"]
        assert np.all(kv >= 0) and np.all(kv <= cap), i["name"]
        assert i["peak_kv_used_sampled"] == pytest.approx(kv.max() / cap)
        assert i["max_queue_sampled"] == t["queued"][mine].max()
        assert 0 <= i["utilisation"] <= 1 and 0 <= i["mean_kv_used"] <= 1


def test_chrome_trace_spans_match_utilisation_and_prompts(
    disagg: tuple[dict[str, Any], Path],
) -> None:
    s, tmp = disagg
    ev = json.loads((tmp / "c.json").read_text())["traceEvents"]
    r = _cols(tmp / "r.parquet")
    total = float(np.nanmax(r["finish"]))  # s, the last request left then
    for i in s["instances"]:
        xs = sorted((e for e in ev if e["ph"] == "X" and e["tid"] == i["index"]),
                    key=lambda e: e["ts"])  # fmt: skip
        start = np.array([e["ts"] for e in xs]) / 1e6  # us -> s
        end = start + np.array([e["dur"] for e in xs]) / 1e6
        assert np.all(end >= start) and np.all(start[1:] >= end[:-1] - 1e-9), i["name"]
        assert (end - start).sum() / total == pytest.approx(i["utilisation"], rel=1e-6)
    pf = next(i for i in s["instances"] if i["role"] == "prefill")
    mine = (r["p_inst"] == pf["name"]) & np.isfinite(r["pf_start"])
    tokens = sum(e["args"]["tokens_or_steps"] for e in ev if e.get("tid") == pf["index"]
                 and e["name"] == "prefill")  # fmt: skip
    assert tokens == int((r["inp"] - r["hit"])[mine].sum())


def test_csv_and_parquet_hold_the_same_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ("--deployment", "tp1x2", "--workload", "poisson:rate=4,n=60,isl=500,osl=uniform:1:60")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert _sim(capsys, tmp_path / "a", "csv", *args) == _sim(
        capsys, tmp_path / "b", "parquet", *args
    )
    for name in ("r", "t"):
        x, y = _cols(tmp_path / "a" / f"{name}.csv"), _cols(tmp_path / "b" / f"{name}.parquet")
        assert list(x) == list(y)
        for k in x:
            if x[k].dtype.kind in "fiu":
                np.testing.assert_array_equal(x[k].astype(float), y[k].astype(float), err_msg=k)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_client_first_token_passes_the_engine_finish_only_within_its_delay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, engine: str
) -> None:
    """docs: a client's ttft exceeds the engine's finish - arrival by at most
    ttft_overhead_s, where the output ends within that delay: with vLLM a one- or two-token
    output, with SGLang (12 decode steps of delay) longer ones too (the doc said one or two
    tokens for every engine)."""
    wl = "poisson:rate=2,n=80,isl=300,osl=uniform:1:8"
    _sim(capsys, tmp_path, "parquet", "--engine", engine, "--deployment", "tp1x1", "--workload", wl)
    r = _cols(tmp_path / "r.parquet")
    base = float(r["ttft_overhead"][r["out"] == 1][0])  # s, Efficiency.ttft_overhead_s
    late = r["ttft"] - (r["finish"] - r["arrival"])
    assert np.all(late <= base + 1e-12)
    longest = int(r["out"][late > 1e-12].max())
    assert longest <= 2 if engine == "vllm" else longest >= 6
