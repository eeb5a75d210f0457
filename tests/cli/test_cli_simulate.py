"""CLI: `pdplan simulate` end to end (run through main(), as a user would)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pdplan.cli import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["simulate", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_agg_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(
        capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1x2",
        "--workload", "poisson:rate=4,n=200,isl=512,osl=64", "--json",
    )  # fmt: skip
    assert rc == 0
    s = json.loads(out)
    assert s["requests"] == 200 and s["finished"] + s["dropped"] == 200
    assert 0 < s["ttft_s"]["p50"] <= s["ttft_s"]["p99"]
    assert 0 < s["tpot_s"]["p50"] <= s["tpot_s"]["p99"]
    assert 0 <= s["slo"]["attainment"] <= 1


def test_xpyd_writes_request_rows_and_a_chrome_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows, trace = tmp_path / "req.csv", tmp_path / "trace.json"
    rc, out, _ = _run(
        capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "1P:tp1+2D:tp1",
        "--workload", "poisson:rate=3,n=120,isl=1024,osl=32", "--engine", "sglang",
        "--requests-out", str(rows), "--chrome-trace", str(trace), "--json",
    )  # fmt: skip
    assert rc == 0 and json.loads(out)["finished"] == 120
    lines = rows.read_text().splitlines()
    assert len(lines) == 121 and "ttft" in lines[0]
    assert json.loads(trace.read_text())  # a Chrome trace: valid JSON with events


def test_a_model_that_does_not_fit_says_by_how_much(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--model", "glm-5", "--gpu", "b200-sxm", "--deployment", "tp8",
            "--workload", "poisson:rate=1,n=20,isl=256,osl=16", "--json"]  # fmt: skip
    rc, _, err = _run(capsys, *args)  # BF16 weights: 173 GiB per GPU
    assert rc != 0 and "does not fit" in err and "short by" in err
    assert "Traceback" not in err
    rc, out, _ = _run(capsys, *args, "--weight-dtype", "fp8", "--kv-dtype", "fp8")
    assert rc == 0 and json.loads(out)["finished"] == 20


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ("poisson:rate=x,n=10", "bad number"),
        ("poisson:rate=1,n=10,foo=3", "unknown key"),
        ("no/such/trace.csv", "no such file"),
        ("gamma:rate=1,n=10", "unknown synthetic workload kind 'gamma'"),
        ("poisson:rate=1,n=10,isl", "isl is not KEY=VALUE"),
        ("closed:c=0,n=10,isl=100,osl=10", "must be >= 1"),
    ],
)
def test_bad_workloads_get_one_line_errors(
    capsys: pytest.CaptureFixture[str], workload: str, message: str
) -> None:
    rc, _, err = _run(
        capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1",
        "--workload", workload,
    )  # fmt: skip
    assert rc != 0 and message in err and "Traceback" not in err


def test_engine_max_sequences_transfer_and_preemption_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1",
            "--workload", "closed:c=300,n=900,isl=500,osl=50", "--json")  # fmt: skip
    rc, out, _ = _run(capsys, *base)
    free = json.loads(out)
    rc2, out2, _ = _run(capsys, *base, "--max-batch", "100")
    capped = json.loads(out2)
    # vLLM on an 80 GB GPU runs up to 1024 sequences: 300 clients all run; capped at 100 they
    # queue for a slot, and TTFT grows
    assert rc == rc2 == 0
    assert capped["ttft_s"]["p50"] > 2 * free["ttft_s"]["p50"]
    rc, _, err = _run(capsys, *base, "--transfer", "teleport")
    assert rc != 0 and "unknown transfer mode" in err
    rc, _, err = _run(capsys, *base, "--preemption", "nope")
    assert rc != 0 and "unknown preemption mode" in err


def test_a_negative_duration_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(
        capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1",
        "--workload", "poisson:rate=2,n=10,isl=100,osl=10", "--duration", "-5",
    )  # fmt: skip
    assert rc != 0 and "duration must be a positive number" in err and "Traceback" not in err


def test_trace_replay_and_a_malformed_line_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "azure.csv"
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
        f"2023-11-16 18:15:{10 + i // 4:02d}.{(i % 4) * 25:02d}00000,{300 + 7 * i},{20 + i}"
        for i in range(40)
    ]
    trace.write_text("\n".join(lines) + "\n")
    base = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1"]
    rc, out, _ = _run(capsys, *base, "--workload", str(trace), "--json")
    assert rc == 0 and json.loads(out)["finished"] == 40
    trace.write_text("\n".join([*lines[:5], "2023-11-16 18:16:00.0,abc,5", *lines[5:]]) + "\n")
    rc, _, err = _run(capsys, *base, "--workload", str(trace))
    assert rc != 0 and "azure.csv:6: non-numeric length" in err and "Traceback" not in err


def test_pools_on_their_own_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    def p50_ttft(deployment: str) -> tuple[float, list[str]]:
        rc, out, err = _run(
            capsys, "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--deployment", deployment,
            "--workload", "poisson:rate=5,n=600,isl=2000,osl=64", "--json",
        )  # fmt: skip
        assert rc == 0, err
        s = json.loads(out)
        return s["ttft_s"]["p50"], [i["name"] for i in s["instances"]]

    h100, names = p50_ttft("2P:tp4@h100-sxm+1D:tp4")
    b200, _ = p50_ttft("2P:tp4@b200-sxm+1D:tp4")
    assert names == ["prefill0:tp4@h100-sxm", "prefill1:tp4@h100-sxm", "decode0:tp4"]
    assert b200 < 0.8 * h100  # the same prompts prefill faster on B200 than on H100
    _, names = p50_ttft("tp4x2@h100-sxm+tp8@b200-sxm")
    assert names == ["agg0:tp4@h100-sxm", "agg1:tp4@h100-sxm", "agg2:tp8@b200-sxm"]


@pytest.mark.parametrize(
    ("deployment", "message"),
    [
        ("2P:tp4@h1000+1D:tp4", "unknown GPU 'h1000'"),
        ("2P:tp4@+1D:tp4", "expected a GPU name after '@'"),
        ("tp4+1D:tp4", "mixes aggregated pools with P / D pools"),
        ("1P:tp1@l40s+1D:tp4", "short by"),  # 70B BF16 on one 48 GB L40S
    ],
)
def test_bad_pool_gpus_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], deployment: str, message: str
) -> None:
    rc, _, err = _run(
        capsys, "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--deployment", deployment,
        "--workload", "poisson:rate=1,n=10,isl=256,osl=16",
    )  # fmt: skip
    assert rc != 0 and message in err and "Traceback" not in err


def test_prefix_cache_on_a_trace_with_block_hashes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Mooncake-style trace: 8 conversations of 6 turns, each turn re-sends the conversation so
    # far (a growing shared prefix of 512-token blocks)
    trace = tmp_path / "conv.jsonl"
    lines = []
    for turn in range(6):
        for conv in range(8):
            blocks = [conv * 100 + b for b in range(4 * (turn + 1))]
            t_ms = (turn * 8 + conv) * 500
            lines.append(json.dumps({"timestamp": t_ms, "input_length": 512 * len(blocks),
                                     "output_length": 32, "hash_ids": blocks}))  # fmt: skip
    trace.write_text("\n".join(lines) + "\n")

    def run(*extra: str) -> dict:
        rc, out, err = _run(
            capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1x2",
            "--workload", str(trace), "--json", *extra,
        )  # fmt: skip
        assert rc == 0, err
        return json.loads(out)

    off, auto = run(), run("--prefix-cache", "auto", "--routing", "prefix")
    assert off["prefix_hit_rate"] == 0.0
    # prefix routing keeps a conversation on one instance, whose cache holds all of it: turn t
    # (1..6, 4t blocks) finds its previous turn's 4(t-1) blocks; sum 4(t-1) / sum 4t = 60 / 84
    assert auto["prefix_hit_rate"] == pytest.approx(60 / 84)
    assert auto["ttft_s"]["mean"] < off["ttft_s"]["mean"]
    tiny = run("--prefix-cache", "4", "--routing", "prefix")  # 4 blocks: hardly anything stays
    assert tiny["prefix_hit_rate"] < auto["prefix_hit_rate"]
    rc, _, err = _run(
        capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "tp1",
        "--workload", "poisson:rate=1,n=10", "--prefix-cache", "auto",
    )  # fmt: skip
    assert rc != 0 and "needs a trace with prefix block hashes" in err


def test_role_switch_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "2P:tp1+1D:tp1",
            "--workload", "poisson:rate=4,n=400,isl=512,osl=64", "--json"]  # fmt: skip
    rc, out, err = _run(capsys, *args, "--switch", "20:prefill1:decode", "--switch-cost", "2")
    assert rc == 0, err
    s = json.loads(out)
    (sw,) = s["role_switches"]
    assert sw["instance"] == 1 and sw["role"] == "decode" and sw["t_s"] >= 22.0
    assert s["finished"] == 400
    for bad in ("20:prefill9:decode", "20:1:agg", "soon:1:decode"):
        rc, _, err = _run(capsys, *args, "--switch", bad)
        assert rc != 0 and "TIME_S:INSTANCE:ROLE" in err and "Traceback" not in err


def test_timeline_out_samples_every_instance(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "timeline.csv"
    args = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment", "1P:tp1+1D:tp1",
            "--workload", "poisson:rate=4,n=400,isl=512,osl=64", "--json"]  # fmt: skip
    rc, _, err = _run(capsys, *args, "--timeline-out", str(out), "--sample-interval", "2")
    assert rc == 0, err
    import numpy as np

    tl = np.genfromtxt(out, delimiter=",", names=True)
    assert tl.dtype.names == ("t_s", "instance", "name", "state", "queued", "running", "kv_tokens")
    assert set(tl["instance"].astype(int)) == {0, 1} and (np.diff(tl["t_s"]) >= 0).all()
    for i in (0, 1):  # at most one sample per 2 s per instance
        assert (np.diff(tl["t_s"][tl["instance"] == i]) >= 2.0 - 1e-9).all()
    rc, _, err = _run(capsys, *args, "--sample-interval", "0")
    assert rc != 0 and "--sample-interval=0.0 must be a positive number of seconds" in err


def test_ttft_counts_the_engines_overhead_and_pd_handoff(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pdplan.perf.efficiency import get_efficiency

    eff = get_efficiency("sglang")
    args = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang",
            "--workload", "poisson:rate=0.5,n=20,isl=256,osl=16", "--json"]  # fmt: skip
    rc, out, _ = _run(capsys, *args, "--deployment", "tp1")
    agg = json.loads(out)["ttft_s"]["p50"]
    assert rc == 0 and agg > eff.ttft_overhead_s  # what `accuracy --simulate` validates
    rc, out, _ = _run(capsys, *args, "--deployment", "1P:tp1+1D:tp1")
    s = json.loads(out)
    assert rc == 0 and s["kv_transfer_s"]["p50"] < eff.pd_handoff_s  # the wire time alone
    assert s["ttft_s"]["p50"] > agg + eff.pd_handoff_s * 0.9


def _sim(capsys: pytest.CaptureFixture[str], deployment: str, workload: str, *more: str) -> Any:
    return _run(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment",
                deployment, "--workload", workload, *more)  # fmt: skip


@pytest.mark.parametrize(
    ("deployment", "more", "message"),
    [
        ("tp1x2", ("--switch", "5:0:decode"), "--switch"),
        ("tp1x2", ("--transfer", "layerwise"), "--transfer layerwise"),
        ("tp1x2", ("--pairing", "round_robin"), "--pairing round_robin"),
        ("tp1x2", ("--routing", "prefix"), "--prefix-cache"),
        ("1P:tp1+1D:tp1", ("--switch", "5:0:decode"), "no prefill instance is left"),
        ("tp1", ("--requests-out", "/tmp/x.json"), "*.csv or *.parquet"),
        ("tp1", ("--chrome-trace", "/tmp/x.csv"), "*.json"),
        ("tp1", ("--requests-out", "/nonexistent-dir/x.csv"), "no folder /nonexistent-dir"),
    ],
)
def test_options_the_deployment_would_ignore_are_refused(
    capsys: pytest.CaptureFixture[str], deployment: str, more: tuple[str, ...], message: str
) -> None:
    rc, _, err = _sim(capsys, deployment, "poisson:rate=2,n=20,isl=256,osl=16", *more)
    assert rc != 0 and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("workload", "more", "message"),
    [
        ("poisson:rate=2,n=20,c=5", (), "closed-only key 'c'"),
        ("closed:c=4,n=20,rate=3", (), "poisson-only key 'rate'"),
        ("poisson:rate=2,n=20,isl=64,input=128", (), "isl given twice"),
        ("closed:c=4,n=20", ("--duration", "5"), "a closed loop runs its n requests"),
        ("poisson:rate=2,n=20", ("--rate", "3"), "--rate applies only to a trace file"),
        ("poisson:rate=50,n=20", ("--duration", "0.0001"), "no request arrived"),
    ],
)
def test_workload_keys_and_flags_that_would_be_ignored_are_refused(
    capsys: pytest.CaptureFixture[str], workload: str, more: tuple[str, ...], message: str
) -> None:
    rc, _, err = _sim(capsys, "tp1", workload, *more)
    assert rc != 0 and message in err and "Traceback" not in err


def test_a_trace_without_timestamps_runs_at_a_rate_or_with_clients(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "lengths.csv"
    trace.write_text("input_length,output_length\n" + "300,20\n" * 30)
    rc, _, err = _sim(capsys, "tp1", str(trace))
    assert rc != 0 and "--rate" in err and "--clients" in err  # says how to give arrivals
    rc, out, _ = _sim(capsys, "tp1", str(trace), "--rate", "4", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 30
    rc, out, _ = _sim(capsys, "tp1", str(trace), "--clients", "3", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 30
    trace.write_text("input_length,output_length\n300,20\n-5,20\n310,20\n")
    rc, _, err = _sim(capsys, "tp1", str(trace), "--rate", "4")
    assert rc != 0 and ":3" in err  # the bad row is named by line
    rc, out, _ = _sim(capsys, "tp1", str(trace), "--rate", "4", "--skip-bad", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 2


def test_requests_past_the_models_context_are_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _sim(capsys, "tp1", "poisson:rate=2,n=10,isl=140000,osl=16", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 10  # simulated, and said so
    assert "10 requests (up to 140,016 tokens) exceed llama-3.1-8b's 131,072-token" in err
    rc, out, err = _sim(capsys, "tp1", "poisson:rate=2,n=10,isl=1000,osl=16", "--json")
    assert rc == 0 and "warning" not in err
