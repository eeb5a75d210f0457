"""CLI / deployment: decode-side KV pre-allocation is SGLang's default on xPyD, with a flag."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main
from pdplan.plan.sim_deploy import build_cluster
from pdplan.sim import RoleSwitch

WL = "poisson:rate=4,n=60,isl=2000,osl=50"


def _json(capsys: pytest.CaptureFixture[str], deployment: str, *more: str) -> tuple[int, str, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--deployment",
               deployment, "--workload", WL, "--json", *more])  # fmt: skip
    out, err = capsys.readouterr()
    return rc, out, err


def _pre(deployment: str, engine: str) -> bool:
    return build_cluster("llama-3.1-8b", "h100-sxm", deployment, engine).config().decode_prealloc


def test_engine_default_sets_prealloc_on_sglang_disaggregated_only() -> None:
    assert _pre("1P:tp1+1D:tp1", "sglang")
    assert _pre("1P:tp1+1D:tp1", "dynamo-sglang")  # Dynamo over SGLang keeps its bootstrap
    assert not _pre("1P:tp1+1D:tp1", "vllm")
    assert not _pre("1P:tp1+1D:tp1", "trtllm")
    assert not _pre("tp1x2", "sglang")
    two_d = build_cluster("llama-3.1-8b", "h100-sxm", "1P:tp1+2D:tp1", "sglang")
    # not modelled across role switches: the engine's default gives way to them
    assert not two_d.config(switches=(RoleSwitch(1.0, 2, "prefill"),)).decode_prealloc


@pytest.mark.parametrize(
    ("engine", "flag", "expected"),
    [
        ("sglang", None, True),
        ("sglang", "--no-prealloc", False),
        ("vllm", None, False),
        ("vllm", "--prealloc", True),
    ],
)
def test_prealloc_flag_and_default_reach_the_summary(
    capsys: pytest.CaptureFixture[str], engine: str, flag: str | None, expected: bool
) -> None:
    rc, out, _ = _json(capsys, "1P:tp1+1D:tp1", "--engine", engine, *([flag] if flag else []))
    assert rc == 0
    s = json.loads(out)
    assert s["decode_prealloc"] is expected
    assert s["finished"] == 60


def test_prealloc_on_an_aggregated_deployment_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = _json(capsys, "tp1x2", "--prealloc")
    assert rc != 0
    assert "--prealloc" in err and "disaggregated" in err


def test_sglang_with_switches_runs_without_prealloc_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _json(capsys, "1P:tp1+2D:tp1", "--engine", "sglang", "--switch", "5:2:prefill")
    assert rc == 0
    assert json.loads(out)["decode_prealloc"] is False
    assert "not modelled across role" in err.replace("\n", " ")
    rc, _, err = _json(capsys, "1P:tp1+2D:tp1", "--prealloc", "--switch", "5:2:prefill")
    assert rc != 0
    assert "role switches is not modelled" in err.replace("\n", " ")
