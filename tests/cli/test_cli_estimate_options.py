"""`pdplan estimate`: options of the other --mode are refused in one line, not ignored."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main

SMALL = ("--model", "llama-3.1-8b", "--gpu", "h100", "--isl", "1024", "--osl", "64", "-c", "4")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["estimate", *SMALL, *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_agg_refuses_disagg_only_options(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "--mode", "agg", "--prefill-workers", "5", "--decode-layout", "tp8")
    assert rc == 2 and out == ""
    assert err.strip() == (
        "error: --decode-layout, --prefill-workers only apply with --mode disagg, not --mode agg"
    )


@pytest.mark.parametrize(
    "option", [("--prefill-layout", "tp2"), ("--decode-workers", "2"), ("--prefill-workers", "1")]
)
def test_agg_default_mode_refuses_each_disagg_option(
    capsys: pytest.CaptureFixture[str], option: tuple[str, str]
) -> None:
    rc, _, err = _run(capsys, *option)  # --mode defaults to agg; even a default value is refused
    assert rc == 2 and err.count("\n") == 1
    assert f"{option[0]} only applies with --mode disagg" in err


def test_disagg_refuses_the_agg_layout(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "--mode", "disagg", "--layout", "tp2")
    assert rc == 2
    assert err.strip() == "error: --layout only applies with --mode agg, not --mode disagg"


def test_each_mode_still_runs_with_its_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--layout", "tp2", "--json")
    assert rc == 0 and json.loads(out)["layout"] == "tp2"
    args = ("--mode", "disagg", "--prefill-layout", "tp1", "--decode-layout", "tp2")
    rc, out, _ = _run(capsys, *args, "--prefill-workers", "2", "--json")
    d = json.loads(out)
    assert rc == 0 and d["mode"] == "disagg" and d["prefill_workers"] == 2
    assert (d["prefill_layout"], d["decode_layout"], d["gpus"]) == ("tp1", "tp2", 4)


def test_a_request_past_the_models_context_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "-c", "2", "--json"]
    assert main([*args, "--isl", "100000", "--osl", "50000"]) == 0
    assert "150,000 tokens exceeds llama-3.1-70b's 131,072-token context" in capsys.readouterr().err
    assert main([*args, "--isl", "1000", "--osl", "100"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_engines_max_running_sequences_cap_the_batch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["estimate", "--model", "llama-3.1-8b", "--gpu", "b200", "--layout", "tp1",
            "--isl", "128", "--osl", "128", "--json"]  # fmt: skip
    out = []
    for c in ("2048", "4096"):
        assert main([*args, "-c", c]) == 0
        out.append(json.loads(capsys.readouterr().out)["estimate"])
    assert all(e["decode_batch"] <= 1024 for e in out)  # vLLM max_num_seqs on >= 70 GiB
    assert out[1]["tpot_ms"] == pytest.approx(out[0]["tpot_ms"])  # the rest queue instead
    assert out[1]["ttft_ms"] > 2 * out[0]["ttft_ms"]


def test_a_ttft_of_hours_prints_in_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    # 10^8 clients queue for the KV pool: TTFT is days, printed in seconds, not 11 digits of ms
    main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "-c", "100000000", "--json"])
    ttft_ms = json.loads(capsys.readouterr().out)["estimate"]["ttft_ms"]
    assert ttft_ms > 1e7
    rc, out, _ = _run(capsys)  # a few clients: milliseconds, as before
    assert rc == 0 and " ms " in out.split("TTFT")[1].split("\n")[0]
    main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "-c", "100000000"])
    line = capsys.readouterr().out.split("TTFT")[1].split("\n")[0]
    assert f"{ttft_ms / 1000:,.0f} s" in line and "ms" not in line
