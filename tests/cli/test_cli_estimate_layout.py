"""CLI: `pdplan estimate`'s layout options take one instance's layout; a deployment (xN, pools)
or run-together parts are refused with the options that say it (through main())."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main


def _estimate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--layout", "tp1x2"),
            "--layout tp1x2: estimate's --layout takes one instance's "
            "layout, without xN: --layout tp1; it models one instance "
            "under --concurrency clients",
        ),
        (
            ("--layout", "1P:tp1+1D:tp2"),
            "not P / D pools: use --mode disagg --prefill-layout "
            "tp1 --decode-layout tp2 --prefill-workers 1 "
            "--decode-workers 1",
        ),
        (("--layout", "tp1@h200-sxm"), "--layout tp1; the GPU is --gpu h200-sxm"),
        (
            ("--layout", "tp4ep4"),
            "--layout tp4ep4: a layout's parts are joined with '-': write 'tp4-ep4'",
        ),
        (
            ("--mode", "disagg", "--prefill-layout", "tp2x3"),
            "--prefill-layout tp2; give the count as --prefill-workers 3",
        ),
    ],
)
def test_a_deployment_given_as_a_layout_points_to_the_right_options(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    rc, out, err = _estimate(capsys, *args)
    assert rc == 2 and message in err and out == "", err
    assert "cannot read layout part" not in err


def test_a_single_layout_still_estimates(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _estimate(capsys, "--layout", "tp2", "--json")
    assert rc == 0 and json.loads(out)["layout"] == "tp2", err


def test_one_output_token_has_no_tpot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "llama-3.1-8b", "--osl", "1"]) == 0
    out = capsys.readouterr().out
    assert "n/a (one output token" in out and "0.00 ms" not in out
