"""CLI: `pdplan simulate` refuses meaningless numbers, flags, switches and ignored options with
a one-line message naming what is wrong, and notes what it chose or skipped (through main())."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main

from .test_cli_simulate_audit import _sim

SMALL = "poisson:rate=2,n=10,isl=128,osl=8"


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ("closed:c=4,n=10,think=nan,isl=100,osl=8", "think=nan must be >= 0"),
        ("closed:c=4,n=10,think=inf,isl=100,osl=8", "think=inf must be >= 0"),
        ("closed:c=4,n=10,think=-1,isl=100,osl=8", "think=-1 must be >= 0"),
        ("closed:c=2.5,n=10,isl=100,osl=8", "c=2.5 must be >= 1 (a whole number"),
        ("closed:concurrency=0,n=10,isl=100,osl=8", "c=0 must be >= 1"),
        ("poisson:rate=nan,n=10,isl=100,osl=8", "rate=nan must be > 0"),
        ("poisson:rate=inf,n=10,isl=100,osl=8", "rate=inf must be > 0"),
        ("poisson:rate=0,n=10,isl=100,osl=8", "rate=0 must be > 0"),
        ("poisson:rate=1,n=nan,isl=100,osl=8", "n=nan must be >= 1"),
        ("poisson:rate=1,n=-3,isl=100,osl=8", "n=-3 must be >= 1"),
        ("poisson:n=10,isl=100,osl=8", "give rate=R"),
        ("poisson:rate=1,n=10,isl=uniform:1:inf,osl=8", "isl: bad length spec 'uniform:1:inf'"),
        ("poisson:rate=1,n=10,isl=100,osl=lognormal:100", "osl: bad length spec"),
    ],
)
def test_meaningless_spec_numbers_are_refused_by_key(
    capsys: pytest.CaptureFixture[str], workload: str, message: str
) -> None:
    rc, out, err = _sim(capsys, "tp1x2", workload)
    assert rc == 2 and message in err and "Traceback" not in err, err
    assert out == "" and "note:" not in err  # refused before any note or progress


def test_a_wrong_rate_names_only_the_rate(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _sim(capsys, "tp1", "poisson:rate=-1,n=10,isl=100,osl=8")
    assert rc == 2 and "rate=-1 must be > 0" in err and "cv" not in err


def test_a_missing_n_is_noted_like_missing_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _sim(capsys, "tp1x2", "poisson:rate=50,isl=64,osl=4", "--json")
    assert rc == 0 and json.loads(out)["requests"] == 1000
    assert "note: the poisson spec gives no n: it runs n=1000 requests; give n=N" in err
    rc, _, err = _sim(capsys, "tp1x2", "poisson:rate=50,n=20,isl=64,osl=4", "--json")
    assert rc == 0 and "note" not in err


def _azure_csv(path: Path, rows: list[str]) -> Path:
    """An Azure-format trace (timestamp, prompt and output tokens) of the given rows."""
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("rate", ["0", "-1", "nan", "inf"])
def test_a_trace_rate_must_be_positive_and_finite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, rate: str
) -> None:
    rows = [f"2023-11-16 18:15:{10 + i:02d}.0,{100 + i},8" for i in range(10)]
    trace = _azure_csv(tmp_path / "azure.csv", rows)
    rc, out, err = _sim(capsys, "tp1x2", str(trace), f"--rate={rate}")
    assert rc == 2 and out == "" and "must be > 0 requests/s" in err, err
    rc, out, err = _sim(capsys, "tp1x2", str(trace), "--rate=5", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 10, err


def test_rate_zero_on_a_synthetic_spec_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _sim(capsys, "tp1", SMALL, "--rate", "0")
    assert rc == 2 and "--rate applies only to a trace file" in err


def test_skip_bad_says_how_many_rows_it_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [f"2023-11-16 18:15:{10 + i:02d}.0,{100 + i},{8 + i}" for i in range(12)]
    rows[2] = "2023-11-16 18:15:12.0,abc,12"  # line 4 of the file
    rows[6] = "2023-11-16 18:15:16.0,-5,3"
    trace = _azure_csv(tmp_path / "azure.csv", rows)
    rc, out, err = _sim(capsys, "tp1", str(trace), "--skip-bad", "--json")
    assert rc == 0 and json.loads(out)["requests"] == 10  # stdout stays pure JSON
    assert f"note: skipped 2 malformed rows of {trace} (first: line 4: " in err
    _azure_csv(trace, rows[:2])
    rc, _, err = _sim(capsys, "tp1", str(trace), "--skip-bad", "--json")
    assert rc == 0 and "skipped" not in err


@pytest.mark.parametrize(
    ("switch", "message"),
    [
        ("20:decode9:prefill", "no instance 'decode9' (instances: prefill0, decode0, decode1"),
        ("-5:1:prefill", "the time '-5' must be a number of seconds >= 0"),
        ("nan:1:decode", "the time 'nan' must be a number of seconds >= 0"),
        ("inf:1:decode", "the time 'inf' must be a number of seconds >= 0"),
        ("20:1:agg", "the role 'agg' must be prefill or decode"),
        ("20:1", "2 parts, expected 3"),
        ("20:prefill0:prefill", "prefill0 is already a prefill instance at 20 s"),
        ("20:1:decode", "decode0 is already a decode instance at 20 s"),
    ],
)
def test_a_bad_switch_names_the_wrong_part(
    capsys: pytest.CaptureFixture[str], switch: str, message: str
) -> None:
    rc, _, err = _sim(capsys, "1P:tp1+2D:tp1", SMALL, f"--switch={switch}")
    assert rc == 2 and message in err and "Traceback" not in err, err
    assert "TIME_S:INSTANCE:ROLE" in err or "would do nothing" in err


def test_a_switch_back_is_not_a_no_op(capsys: pytest.CaptureFixture[str]) -> None:
    more = ("--switch", "10:1:prefill", "--switch", "20:1:decode", "--json")
    rc, out, err = _sim(capsys, "1P:tp1+2D:tp1", SMALL, *more)
    assert rc == 0 and json.loads(out)["finished"] == 10, err
    rc, _, err = _sim(capsys, "1P:tp1+2D:tp1", SMALL, "--switch", "10:1:prefill",
                      "--switch", "20:1:prefill")  # fmt: skip
    assert rc == 2 and "decode0 is already a prefill instance at 20 s" in err


def test_sample_interval_sets_the_table_and_timeline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the table's KV used mean / peak comes from the samples too: the option is never ignored
    rc, out, err = _sim(capsys, "tp1", SMALL, "--sample-interval", "5")
    assert rc == 0 and "KV used" in out, err
    timeline = tmp_path / "t.csv"
    rc, _, err = _sim(capsys, "tp1", SMALL, "--sample-interval", "5",
                      "--timeline-out", str(timeline))  # fmt: skip
    assert rc == 0 and timeline.is_file(), err
    rc, out, err = _sim(capsys, "tp1", SMALL, "--sample-interval", "5", "--json")
    assert rc == 0 and "max_queue_sampled" in out, err  # --json reports sampled maxima


def test_a_short_run_is_sampled_finely_enough_for_its_kv_mean(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # ~1.4 s of 10 requests: at the default 1 s its mean KV rested on 2 samples (one at 0 s,
    # empty); run again at 1/107 of its length it is the time average of the requests held
    short, timeline = "poisson:rate=20,n=10,isl=1000,osl=100", tmp_path / "t.csv"
    rc, out, err = _sim(capsys, "tp1", short, "--json", "--timeline-out", str(timeline))
    assert rc == 0, err
    inst = json.loads(out)["instances"][0]
    assert len(timeline.read_text().splitlines()) > 50
    # in use: each running sequence holds its prompt and about half its output, ~1,050 tokens
    held = inst["mean_running"] * (1000 + 100 / 2) / inst["kv_capacity_tokens"]
    assert inst["mean_kv_used"] == pytest.approx(held, rel=0.2)
    rc, out, err = _sim(capsys, "tp1", short, "--json", "--sample-interval", "1",
                        "--timeline-out", str(timeline))  # fmt: skip
    assert rc == 0 and len(timeline.read_text().splitlines()) <= 4  # as asked: not resampled


def test_a_prefix_cache_larger_than_the_kv_pool_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "conv.jsonl"
    lines = [json.dumps({"timestamp": i * 100, "input_length": 1024, "output_length": 8,
                         "hash_ids": [i, i + 1]}) for i in range(10)]  # fmt: skip
    trace.write_text("\n".join(lines) + "\n")
    rc, _, err = _sim(capsys, "1P:tp1+1D:tp1", str(trace), "--prefix-cache",
                      "99999999999999999999")  # fmt: skip
    assert rc == 2 and "more blocks than the KV pool holds (prefill0:tp1: " in err, err
    assert "use auto" in err
    rc, out, err = _sim(capsys, "1P:tp1+1D:tp1", str(trace), "--prefix-cache", "16", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 10, err


def test_pairing_help_lists_its_values(capsys: pytest.CaptureFixture[str]) -> None:
    from pdplan.sim.config import PAIRINGS

    main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    start = text.index("--pairing")
    help_text = text[start : text.index("--transfer", start)]
    assert all(p in help_text for p in PAIRINGS), help_text


def test_a_pool_whose_tp_crosses_nodes_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    more = ("--model", "llama-3.1-70b", "--json")
    rc = main(["simulate", "--gpu", "h100-sxm", "--deployment", "1P:tp16+1D:tp16",
               "--workload", "poisson:rate=1,n=4,isl=64,osl=4", *more])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0 and json.loads(out)["finished"] == 4, err
    warning = "warning: layout tp16 on h100-sxm: TP=16 crosses nodes (scale-up domain 8 GPUs)"
    assert err.count(warning) == 1  # one line per layout and GPU, not per pool
    rc = main(["simulate", "--gpu", "h100-sxm", "--deployment", "tp8-pp2",
               "--workload", "poisson:rate=1,n=4,isl=64,osl=4", *more])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0 and "warning" not in err  # PP across nodes is the seed rule's own layout


def test_one_request_past_the_context_is_named_in_the_singular(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc = main(
        ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1",
         "--workload", "poisson:rate=1,n=1,isl=200000,osl=10"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert "a request of 200,010 tokens exceeds" in " ".join(err.split()), (rc, err)
