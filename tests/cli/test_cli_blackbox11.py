"""Black-box round 11: help without an empty error line; KV quantised in transit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pdplan.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("argv", [[], ["workload"]])
def test_no_command_prints_only_the_help(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    rc, out, err = _run(capsys, *argv)
    # click's convention for a group called without its command: the help, exit 2
    assert rc == 2
    assert "Usage:" in out and "Commands" in out
    assert "error" not in err and err.strip() == ""


def test_no_command_in_a_subprocess_has_no_error_line() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "pdplan.cli"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 2 and "Usage:" in r.stdout and "Commands" in r.stdout
    assert "error" not in r.stderr, r.stderr


def test_kv_refuses_an_upcast_in_transit(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "kv", "--kv-dtype", "fp8", "--transit-dtype", "bf16")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "transit dtype bf16 (2 B per value) is wider than the fp8 KV cache" in err


@pytest.mark.parametrize(
    ("transit", "share", "scales"),
    [
        ("fp8", "50%", "per-tensor scales, so no per-block scale bytes"),
        ("fp4", "28%", "per-block scales included: +1/16 B per value"),  # NVFP4: FP8 per 16
        ("int4", "26%", "per-block scales included: +1/64 B per value"),  # FP16 per 128
    ],
)
def test_kv_transit_note_says_what_the_scales_cost(
    capsys: pytest.CaptureFixture[str], transit: str, share: str, scales: str
) -> None:
    rc, out, _ = _run(capsys, "kv", "--transit-dtype", transit, "--json")
    notes = json.loads(out)["notes"]
    want = f"quantised in transit bf16 -> {transit}: {share} of the bytes ({scales})"
    assert rc == 0 and want in notes
    assert sum("in transit" in n for n in notes) == 1


def test_kv_transit_in_the_same_width_is_not_called_quantised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = _run(capsys, "kv", "--transit-dtype", "fp16")
    assert rc == 0 and "sent as fp16: the same 2 B per value as the bf16 cache" in out
    assert "quantised" not in out
