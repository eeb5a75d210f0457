"""A GPU of a vendor the efficiencies were not fitted on is said to be so, by estimate, ratio and
simulate (stderr and --json), and an NVIDIA GPU is not."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main
from pdplan.perf.efficiency import vendor_caveat

SIM = ("--deployment", "tp4", "--workload", "poisson:rate=2,n=20")


@pytest.mark.parametrize(
    ("cmd", "extra"),
    [("estimate", ()), ("ratio", ()), ("simulate", SIM)],
)
def test_amd_gpu_is_cautioned_nvidia_is_not(
    capsys: pytest.CaptureFixture[str], cmd: str, extra: tuple[str, ...]
) -> None:
    base = [cmd, "--model", "llama-3.1-70b", *extra]
    assert main([*base, "--gpu", "mi300x"]) == 0
    err = capsys.readouterr().err
    assert "mi300x (AMD): the cost model's efficiencies were fitted on NVIDIA runs" in err
    assert "about 2x the TPOT" in err
    assert main([*base, "--gpu", "h200"]) == 0
    assert "fitted on NVIDIA runs" not in capsys.readouterr().err


def test_other_vendors_are_cautioned_without_amds_numbers() -> None:
    assert vendor_caveat("h100-sxm", "NVIDIA") is None
    intel = vendor_caveat("gaudi3", "Intel")
    assert intel is not None and "no published run" in intel


def test_estimate_json_lists_the_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "llama-3.1-70b", "--gpu", "mi325x", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("mi325x (AMD)" in w for w in out["warnings"])


@pytest.mark.parametrize(
    ("cmd", "extra"),
    [("estimate", ()), ("ratio", ()), ("simulate", ("--deployment", "tp2", *SIM[2:]))],
)
def test_pre_ampere_nvidia_gpu_is_cautioned(
    capsys: pytest.CaptureFixture[str], cmd: str, extra: tuple[str, ...]
) -> None:
    base = [cmd, "--model", "llama-3.1-8b", *extra]
    assert main([*base, "--gpu", "Tesla T4"]) == 0
    assert "t4 (Volta / Turing): the cost model's efficiencies" in capsys.readouterr().err
    assert main([*base, "--gpu", "a10g"]) == 0
    assert "Volta / Turing" not in capsys.readouterr().err
