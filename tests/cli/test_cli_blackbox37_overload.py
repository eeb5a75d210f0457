"""CLI: `pdplan simulate`'s overload warning names the pool that holds the backlog (black-box
audit 37)."""

from __future__ import annotations

import json
import re

import pytest

from pdplan.cli import main


def _sim(
    capsys: pytest.CaptureFixture[str], deployment: str, workload: str, *more: str
) -> tuple[dict, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
               "--deployment", deployment, "--workload", workload, "--json", *more])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out), err


def test_a_prefill_bound_pd_run_blames_the_prefill_pool_not_the_busy_decodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # one prefill instance for 40 long prompts a second: the prompts queue in front of it,
    # while the decodes, busy whenever their batch holds a request, have no queue at all
    s, err = _sim(capsys, "1P:tp1+2D:tp1", "poisson:rate=40,n=400,isl=4000,osl=lognormal:400:0.9")
    queued = {i["role"]: i["mean_queue"] for i in s["instances"]}
    assert queued["prefill"] > 10 and queued["decode"] == 0  # the run the warning describes
    assert "first tokens come at only" in err
    assert "add decode instances" not in err  # was: 'the decode instances are saturated'
    m = re.search(r"the prefill instances are (saturated|the bottleneck) \(busy \d+ % of the "
                  r"time, ([\d.]+) requests queued", err)  # fmt: skip
    assert m and float(m.group(2)) > 10
    assert re.search(r"add prefill instances \(about \d+P:tp1 instead of 1P:tp1", err)


@pytest.mark.parametrize(
    ("deployment", "workload", "more"),
    [
        ("1P:tp1+1D:tp1", "poisson:rate=20,n=1000,isl=200,osl=2000", ()),
        # a small decode KV pool: prompts wait for a decode slot, and the prefills, their KV
        # full of prompts the decode has not taken, stall with long queues of their own
        ("2P:tp1+1D:tp1", "poisson:rate=12,n=300,isl=lognormal:3000:1,osl=lognormal:300:1",
         ("--mem-fraction", "0.25", "--max-batch", "16")),
    ],
)  # fmt: skip
def test_a_decode_bound_pd_run_still_blames_the_decode_pool(
    capsys: pytest.CaptureFixture[str], deployment: str, workload: str, more: tuple[str, ...]
) -> None:
    _, err = _sim(capsys, deployment, workload, *more)
    assert "the decode instances are saturated" in err and "D:tp1 instead of 1D:tp1" in err
    assert "add prefill instances" not in err
