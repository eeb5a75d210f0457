"""CLI: a hybrid model whose KV memory cannot hold one sequence's recurrent state is refused
with the shortfall (it used to run and report every request dropped)."""

from __future__ import annotations

import pytest
from tests.cli.helpers import run_cli


def test_simulate_refuses_a_layout_with_no_room_for_one_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run_cli(
        capsys,
        "simulate",
        "--model",
        "nemotron-h-56b",
        "--gpu",
        "rtx-5090",
        "--deployment",
        "tp4x2",
        "--workload",
        "poisson:rate=4,n=20,isl=200,osl=20",
    )
    assert rc == 2 and out == ""
    assert "recurrent state" in err and "short by" in err and "Traceback" not in err
