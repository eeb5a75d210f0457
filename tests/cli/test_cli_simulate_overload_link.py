"""CLI: an overload caused by KV transfers sharing the decode side's links names the links,
not the (idle-ish) busiest pool."""

from __future__ import annotations

import pytest

from pdplan.cli import main


def test_a_link_bound_overload_blames_the_kv_links(capsys: pytest.CaptureFixture[str]) -> None:
    # 16 prefill instances push ~1 GB of KV per request into one decode GPU's NIC
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h200", "--deployment",
               "16P:tp1+1D:tp1", "--workload", "poisson:rate=60,n=1500,isl=8000,osl=2",
               "--json"])  # fmt: skip
    _, err = capsys.readouterr()
    assert rc == 0 and "warning: overloaded" in err
    assert "the KV transfers are link-bound" in err and "add decode instances" in err
    assert "add prefill instances" not in err
