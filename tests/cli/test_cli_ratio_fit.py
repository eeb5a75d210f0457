"""`pdplan ratio` refusals: a prefill layout that cannot hold the model or one prompt (1), the
shortfall quoted for the largest layout tried (7), and input it used to take silently (8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main

pytest.importorskip("pdplan.perf.costmodel")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


NUMBERS = (
    "ratio",
    "--isl",
    "4000",
    "--osl",
    "500",
    "--prefill-tps",
    "8000",
    "--decode-tps",
    "2000",
)


# 1. a given prefill layout is checked as the decode layout (and estimate's) are


@pytest.mark.parametrize(
    ("job", "short"),
    [
        (("--prefill-layout", "tp1"), "short by 62.4 GiB (tp1, BF16 weights)"),
        (("-m", "llama-3.1-405b", "-g", "h100", "--prefill-layout", "tp2"), "short by"),
        (("-m", "deepseek-v3", "-g", "h100", "--prefill-layout", "tp8"), "short by"),
    ],
)
def test_a_prefill_layout_that_does_not_fit_is_refused(
    capsys: pytest.CaptureFixture[str], job: tuple[str, ...], short: str
) -> None:
    rc, out, err = _run(capsys, "ratio", *job)
    assert rc == 2 and out == "" and short in err, err
    assert "--prefill-layout" in err and "Traceback" not in err


def test_the_refusal_says_what_would_fit(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "ratio", "--prefill-layout", "tp1")
    assert rc == 2 and "would fit: --prefill-layout tp2" in err, err
    rc, _, err = _run(capsys, "ratio", "--decode-layout", "tp1")
    assert rc == 2 and "short by 62.4 GiB" in err and "would fit: --decode-layout tp2" in err


def test_a_prefill_layout_must_hold_one_prompt_of_the_isl(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # tp4 holds ~480k tokens of Llama-3.1-70B KV on H100s: a 1M-token prompt does not fit
    rc, _, err = _run(capsys, "ratio", "--prefill-layout", "tp4", "--isl", "1000000")
    assert rc == 2 and "holds no prompt of 1,000,000 tokens" in err, err
    assert _run(capsys, "ratio", "--prefill-layout", "tp2")[0] == 0  # fits: still planned


# 7. the shortfall quoted is the largest layout's, as "up to" says


def test_no_layout_holds_quotes_the_largest_layout_tried(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = _run(capsys, "ratio", "-m", "kimi-k3", "-g", "a10")
    assert rc == 2 and "no layout up to tp8-pp8 holds kimi-k3" in err, err
    assert "(tp8-pp8, BF16 weights)" in err and "(tp4," not in err


# 8. traces past the context window, directories, ignored options, absurd rates


def test_a_trace_request_past_the_context_is_flagged_by_its_own_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [{"timestamp": 0, "input_length": 130_000, "output_length": 5_000}]
    rows += [
        {"timestamp": i * 1000, "input_length": 100, "output_length": 10} for i in range(1, 20)
    ]
    f = tmp_path / "trace.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, out, err = _run(capsys, "ratio", "--lengths", str(f), "--json")
    # 130,000 + 5,000 > 131,072 (the mean output, 259.5, would hide it)
    assert rc == 0 and "a request of 135,000 tokens exceeds llama-3.1-70b's 131,072" in err, err
    assert any("135,000" in w for w in json.loads(out)["warnings"])
    rc, out, err = _run(capsys, "ratio", "--lengths", str(f), "--osl", "500", "--json")
    assert rc == 0 and "warning" not in err  # --osl replaces the trace's outputs: 130,500 fits


def test_lengths_given_a_directory_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, _, err = _run(capsys, "ratio", "--lengths", str(tmp_path))
    assert rc == 2 and "is a directory" in err and "no such file" not in err, err


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("--tpot", "0.01"), "--tpot only applies when the cost model computes P and D"),
        (("--engine", "sglang", "--kv-dtype", "fp8"), "--engine, --kv-dtype only apply"),
        (("--decode-layout", "tp8"), "--decode-layout only applies"),
        (("--rates", "1,2"), "--rates only applies"),
    ],
)
def test_numbers_mode_refuses_the_options_it_ignores(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], named: str
) -> None:
    rc, out, err = _run(capsys, *NUMBERS, *extra)
    assert rc == 2 and out == "" and named in err, err
    assert _run(capsys, *NUMBERS)[0] == 0  # without them it still answers 2:1


def test_model_mode_keeps_its_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "ratio", "--json")
    d = json.loads(out)
    assert rc == 0 and (d["tpot_s"], d["engine"]) == (0.05, "vllm"), err


@pytest.mark.parametrize(
    "argv",
    [(*NUMBERS, "--qps", "1e300"), ("ratio", "--qps", "1e300"), ("ratio", "--rates", "1,1e300")],
)
def test_an_absurd_request_rate_is_refused(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == "" and "more than 1,000,000" in err, err
    assert len(err) < 400  # one line, no 300-digit counts


def test_a_large_but_real_rate_is_planned(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, *NUMBERS, "--qps", "1000", "--json")
    assert rc == 0 and json.loads(out)["n_prefill_gpus"] == 715  # 1000 * 0.5 / 0.7
