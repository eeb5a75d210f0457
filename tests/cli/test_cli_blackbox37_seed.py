"""CLI: `pdplan simulate --seed` is refused where nothing in the run is drawn at random
(black-box audit 37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main


def _sim(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    rows = "".join(f"{k * 0.5:.1f},{200 + 10 * k},{8 + k}\n" for k in range(20))
    path.write_text("timestamp,input_length,output_length\n" + rows)
    return path


@pytest.mark.parametrize(
    "more",
    [
        ("--deployment", "tp1x2", "--workload", "{trace}", "--format", "csv",
         "--map", "input=input_length,output=output_length,time=timestamp"),
        ("--deployment", "tp1x2", "--workload", "{trace}", "--clients", "3"),
        ("--deployment", "tp1x2", "--workload", "closed:c=2,n=10,isl=100,osl=10"),
    ],
)  # fmt: skip
def test_a_seed_nothing_draws_is_refused(
    capsys: pytest.CaptureFixture[str], trace: Path, more: tuple[str, ...]
) -> None:
    args = [a.format(trace=trace) for a in more]
    rc, _, err = _sim(capsys, *args)
    assert rc == 0, err  # the run itself is fine
    rc, _, err = _sim(capsys, *args, "--seed", "7")  # was: the same run, seed silently unused
    assert rc == 2 and "--seed 7: nothing in this run is drawn at random" in err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("error: --seed 7")


@pytest.mark.parametrize(
    "more",
    [
        ("--deployment", "tp1x2", "--workload", "{trace}", "--rate", "4"),  # Poisson arrivals
        ("--deployment", "tp1x4", "--workload", "{trace}", "--clients", "6", "--routing", "p2c"),
        ("--deployment", "tp1x2", "--workload", "closed:c=2,n=40,isl=uniform:50:400,osl=10"),
    ],
)  # fmt: skip
def test_a_seed_that_draws_something_changes_the_run(
    capsys: pytest.CaptureFixture[str], trace: Path, more: tuple[str, ...]
) -> None:
    args = [a.format(trace=trace) for a in more]
    runs = []
    for seed in ("1", "2"):
        rc, out, err = _sim(capsys, *args, "--seed", seed)
        assert rc == 0, err
        runs.append(json.loads(out)["instances"])
    assert runs[0] != runs[1]
