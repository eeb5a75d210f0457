"""CLI: `pdplan simulate` output files, decode-slot waits, drop reasons, completion overload."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pdplan.cli import main

DOCS = Path(__file__).resolve().parents[2] / "docs" / "simulate-outputs.md"
SLOW_DECODE = "poisson:rate=4,n=300,isl=lognormal:3000:0.8,osl=lognormal:300:0.5"
AGG_DECODE = "isl=lognormal:3000:0.8,osl=lognormal:300:0.7"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["simulate", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _small(capsys: pytest.CaptureFixture[str], deployment: str, workload: str, *more: str) -> Any:
    return _run(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment",
                deployment, "--workload", workload, *more)  # fmt: skip


def _big(capsys: pytest.CaptureFixture[str], deployment: str, workload: str, *more: str) -> Any:
    return _run(capsys, "--model", "llama-3.1-70b", "--gpu", "h200", "--deployment",
                deployment, "--workload", workload, *more)  # fmt: skip


def _trace(path: Path, rows: list[tuple[float, int, int]]) -> str:
    lines = ["timestamp,input_length,output_length", *(f"{t},{i},{o}" for t, i, o in rows)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _csv(path: Path) -> dict[str, list[str]]:
    head, *rows = path.read_text().splitlines()
    cells = [r.split(",") for r in rows]
    return {k: [r[j] for r in cells] for j, k in enumerate(head.split(","))}


def test_requests_out_holds_only_the_requests_that_arrived(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = _trace(tmp_path / "t.csv", [(1000.0 * t, 200, 8) for t in range(50)])  # ms
    rows = tmp_path / "rows.csv"
    rc, out, err = _small(capsys, "tp1", trace, "--duration", "10.5",
                          "--requests-out", str(rows), "--json")  # fmt: skip
    assert rc == 0, err
    assert json.loads(out)["requests"] == 11
    t = _csv(rows)
    assert t["id"] == [str(i) for i in range(11)] and set(t["state"]) == {"done"}


def test_a_decode_bound_pd_run_counts_its_decode_queue_and_slot_wait(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tl = tmp_path / "tl.csv"
    rc, out, err = _big(capsys, "2P:tp4+2D:tp4", SLOW_DECODE, "--max-batch", "4",
                        "--timeline-out", str(tl), "--json")  # fmt: skip
    assert rc == 0, err
    s = json.loads(out)
    t = np.genfromtxt(tl, delimiter=",", names=True)
    for inst in s["instances"]:
        if inst["role"] == "decode":  # time-averaged, as the timeline's samples
            sampled = float(np.mean(t["queued"][t["instance"] == inst["index"]]))
            assert inst["mean_queue"] > 10 and inst["mean_queue"] == pytest.approx(sampled, rel=0.2)
    assert s["kv_transfer_s"]["p99"] < 0.5  # the wire: milliseconds, not the wait for a slot
    assert s["decode_slot_wait_s"]["p50"] > 10
    m = re.search(
        r"decode instances are saturated \(busy \d+ % of the time, ([\d.]+) requests", err
    )
    assert m and float(m.group(1)) > 10
    rc, out, _ = _big(capsys, "2P:tp4+2D:tp4", SLOW_DECODE, "--max-batch", "4")
    assert rc == 0 and "wait for decode slot" in out and "KV transfer" in out


def test_an_aggregated_decode_bound_overload_is_flagged_by_its_completions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = _big(capsys, "tp4", f"poisson:rate=6,n=600,{AGG_DECODE}", "--json")
    assert rc == 0
    m = re.search(r"overloaded: requests arrive at ([\d.]+) req/s but are served at only "
                  r"([\d.]+) req/s", err)  # fmt: skip
    assert m and float(m.group(2)) < 0.8 * float(m.group(1))
    assert "in the batch on each" in err and "the aggregated instances are saturated" in err


@pytest.mark.parametrize("workload", ["poisson:rate=1,n=600", "poisson:rate=2,n=50"])
def test_healthy_or_short_aggregated_runs_are_not_flagged(
    capsys: pytest.CaptureFixture[str], workload: str
) -> None:
    rc, _, err = _big(capsys, "tp4", f"{workload},{AGG_DECODE}", "--json")
    assert rc == 0 and "overloaded" not in err


def test_the_table_explains_drops_and_an_all_dropped_run_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    some = _trace(tmp_path / "some.csv", [(0.0, 100, 10), (1.0, 0, 10), (2.0, 100, 0)])
    rc, out, _ = _small(capsys, "tp1", some)
    assert rc == 0 and re.search(r"dropped\s+│ 2 \(empty prompt or output: 2\)", out)
    every = _trace(tmp_path / "every.csv", [(0.0, 0, 10), (1.0, 100, 0)])
    for more in ((), ("--json",)):
        rc, out, err = _small(capsys, "tp1", every, *more)
        assert rc != 0 and out.strip() == "" and "Traceback" not in err
        assert "all 2 requests were dropped (empty prompt or output: 2)" in err


def test_output_files_name_instances_states_and_the_ttft_overhead(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows, tl, trace = tmp_path / "r.csv", tmp_path / "tl.csv", tmp_path / "t.json"
    rc, _, err = _small(capsys, "1P:tp1+1D:tp1", "poisson:rate=4,n=60,isl=512,osl=16",
                        "--requests-out", str(rows), "--timeline-out", str(tl),
                        "--chrome-trace", str(trace), "--json")  # fmt: skip
    assert rc == 0, err
    r = _csv(rows)
    assert set(r["state"]) == {"done"} and set(r["p_inst"]) == {"prefill0:tp1"}
    assert set(r["d_inst"]) == {"decode0:tp1"}
    f, a, o, ttft = (np.array(r[k], float) for k in ("first", "arrival", "ttft_overhead", "ttft"))
    assert np.allclose(ttft, f - a + o)  # the client-visible TTFT, from the file's own columns
    assert float(r["ttft_overhead"][0]) > 0
    assert set(_csv(tl)["name"]) == {"prefill0:tp1", "decode0:tp1"}
    ev = json.loads(trace.read_text())["traceEvents"]
    named = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert set(named.values()) >= {"prefill0:tp1", "decode0:tp1"}


def test_the_outputs_doc_describes_every_column() -> None:
    from pdplan.perf.step import LinearStepModel
    from pdplan.sim import InstanceSpec, SimConfig, simulate
    from pdplan.workload.core import Workload

    step = LinearStepModel(base_s=0.01, per_token_s=0.001)
    wl = Workload(np.full(3, 100, np.int32), np.full(3, 4, np.int32), np.arange(3.0))
    res = simulate(SimConfig(instances=(InstanceSpec("agg", step),)), wl)
    text = DOCS.read_text()
    for col in [*res.request_table(), *res.timeline_table()]:
        assert f"`{col}`" in text, col
    for word in ("thread_name", "process_name", "ttft_overhead", "not_arrived", "unfinished"):
        assert word in text


def test_the_outputs_doc_describes_every_summary_key() -> None:
    from pdplan.perf.step import LinearStepModel
    from pdplan.sim import InstanceSpec, SimConfig, simulate
    from pdplan.workload.core import Workload

    step = LinearStepModel(base_s=0.01, per_token_s=0.001)
    wl = Workload(np.full(3, 100, np.int32), np.full(3, 4, np.int32), np.arange(3.0))
    s = simulate(SimConfig(instances=(InstanceSpec("agg", step),)), wl).summary()
    text = DOCS.read_text()
    for key in [*s, *s["instances"][0], *s["little"], *s["slo"]]:
        assert f"`{key}" in text, key
