"""Black-box round 18: a heterogeneous decode pool holds what its largest instance holds."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main


def test_a_long_request_is_decoded_on_the_pool_that_holds_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # llama-3.1-70b tp4: 11,759 tokens of KV on an A100 40GB, 483,618 on an H100. Every
    # 20,000-token request was dropped ("exceed the KV capacity of one decode instance
    # decode0:tp4@a100-40gb (11,759 tokens)") though decode1:tp4 holds it
    rc = main(
        ["simulate", "--model", "llama-3.1-70b", "--gpu", "h100", "--json",
         "--deployment", "1P:tp4+1D:tp4@a100-40gb+1D:tp4",
         "--workload", "poisson:rate=0.01,n=3,isl=20000,osl=10"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    data = json.loads(out)
    assert (data["finished"], data["dropped"]) == (3, 0), data["drop_reasons"]
    caps = {i["name"]: i["kv_capacity_tokens"] for i in data["instances"]}
    assert caps["decode0:tp4@a100-40gb"] < 20_010 < caps["decode1:tp4"]
