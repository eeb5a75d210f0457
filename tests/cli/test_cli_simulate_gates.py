"""CLI: `pdplan simulate --adp-balance / --batch-wait` (TensorRT-LLM context gates): they hold
new prompts back, and bad values or deployments they cannot apply to are refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pdplan.cli import main

SMALL = "poisson:rate=2,n=10,isl=128,osl=8"
RANDOM = "poisson:rate=20,n=600,isl=uniform:800:1000,osl=uniform:300:500"


def _run(capsys: pytest.CaptureFixture[str], deployment: str, *more: str) -> dict[str, Any]:
    rc = main(["simulate", "--model", "deepseek-v3", "--gpu", "b200", "--engine", "trtllm",
               "--weight-dtype", "fp8", "--deployment", deployment, "--workload", RANDOM,
               "--json", *more])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def _ttft(capsys: pytest.CaptureFixture[str], deployment: str, *more: str) -> float:
    return float(_run(capsys, deployment, *more)["ttft_s"]["mean"])


def test_adp_balance_makes_prompts_wait_for_every_rank(capsys: pytest.CaptureFixture[str]) -> None:
    free = _ttft(capsys, "dp8-ep8")
    held = _ttft(capsys, "dp8-ep8", "--adp-balance", "60:0")
    assert held > 2 * free  # Poisson arrivals cover 8 ranks only every ~0.4 s or 60 steps
    gates = _run(capsys, "dp8-ep8", "--adp-balance", "50")["ctx_gates"]
    assert gates == {
        "agg0:tp1-dp8-ep8": dict(kind="balance", timeout_steps=50, ranks=8, wait_steps=10, tokens=0)
    }  # TensorRT-LLM's default batching wait, 10 iterations


def test_batch_wait_holds_prompts_without_attention_dp(capsys: pytest.CaptureFixture[str]) -> None:
    free = _ttft(capsys, "tp8")
    held = _ttft(capsys, "tp8", "--batch-wait", "40:0.8")
    assert held > 1.5 * free


@pytest.mark.parametrize(
    ("deployment", "flags", "message"),
    [
        ("tp8", ["--adp-balance", "60"], "no aggregated pool has a dpN layout"),
        ("1P:dp8-ep8+1D:dp8-ep8", ["--adp-balance", "60"], "ranks of aggregated pools"),
        ("1P:tp8+1D:tp8", ["--batch-wait", "40:0.8"], "decodes of aggregated pools"),
        ("dp8-ep8", ["--adp-balance", "\u00b2"], "must be a whole number of iterations"),
        ("tp8", ["--batch-wait", "\uff14\uff10:0.8"], "must be a whole number of iterations"),
        ("dp8-ep8", ["--adp-balance", "9" * 5000], "must be a whole number of iterations"),
        ("dp8-ep8", ["--batch-wait", "40:0.8"], "no aggregated pool has a layout without dpN"),
        ("tp8", ["--batch-wait", "40"], "use ITERS:RATIO"),
        ("tp8", ["--batch-wait", "40:1.5"], "ratio '1.5' must be in (0, 1]"),
        (
            "tp8",
            ["--batch-wait", "0:0.5"],
            "the timeout '0' must be a whole number of iterations, 1-",
        ),
        ("dp8-ep8", ["--adp-balance", "x"], "the timeout 'x' must be a whole number of iterations"),
        ("dp8-ep8", ["--adp-balance", "60:-1"], "the batching wait '-1'"),
        ("dp8-ep8", ["--adp-balance", "60:1:2"], "TIMEOUT_ITERS[:WAIT_ITERS]"),
    ],
)
def test_bad_gate_settings_are_refused(
    capsys: pytest.CaptureFixture[str], deployment: str, flags: list[str], message: str
) -> None:
    rc = main(["simulate", "--model", "deepseek-v3", "--gpu", "b200", "--engine", "trtllm",
               "--weight-dtype", "fp8", "--deployment", deployment, "--workload",
               SMALL, *flags])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err, err


def test_gates_are_trtllm_settings(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["simulate", "--model", "deepseek-v3", "--gpu", "b200", "--deployment", "dp8-ep8",
               "--workload", SMALL, "--adp-balance", "60"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "add --engine trtllm" in err, err
