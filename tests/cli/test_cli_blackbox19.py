"""Black-box pass 19, `pdplan estimate --mode disagg`: the KV path follows simulate's placement
(P and D on one NVLink node: NVLink, else the NIC) and is stated; at one client the estimate's
TTFT is the simulator's (no prefill-queue wait, the same transfer)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pdplan.cli import main

MODEL = ("--model", "llama-3.1-70b", "--gpu", "h100")
LEN = ("--isl", "4000", "--osl", "50")


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    rc = main([*args, "--json"])
    out, _ = capsys.readouterr()
    assert rc == 0, out
    return json.loads(out)


def _estimate(capsys: pytest.CaptureFixture[str], n_p: int, n_d: int, *more: str) -> Any:
    return _json(capsys, "estimate", *MODEL, *LEN, "--mode", "disagg", "--prefill-layout", "tp4",
                 "--decode-layout", "tp4", "--prefill-workers", str(n_p), "--decode-workers",
                 str(n_d), *more)  # fmt: skip


def _simulate(capsys: pytest.CaptureFixture[str], n_p: int, n_d: int) -> Any:
    return _json(capsys, "simulate", *MODEL, "--deployment", f"{n_p}P:tp4+{n_d}D:tp4",
                 "--workload", "closed:c=1,n=4,isl=4000,osl=50")  # fmt: skip


@pytest.mark.parametrize(
    ("n_p", "n_d", "path", "share"),
    [(1, 1, "nvlink", 1.0), (2, 1, "nic", 0.0), (1, 2, "mixed", 0.5), (2, 2, "nic", 0.0)],
)
def test_kv_path_follows_simulate_placement(
    capsys: pytest.CaptureFixture[str], n_p: int, n_d: int, path: str, share: float
) -> None:
    est = _estimate(capsys, n_p, n_d, "-c", "1")
    assert (est["kv_path"], est["kv_nvlink_share"]) == (path, share)
    sim = _simulate(capsys, n_p, n_d)  # one client: every transfer alone on its link
    assert est["kv_transfer_ms"] == pytest.approx(sim["kv_transfer_s"]["mean"] * 1e3, rel=1e-6)


def test_one_client_ttft_matches_simulate(capsys: pytest.CaptureFixture[str]) -> None:
    est = _estimate(capsys, 1, 1, "-c", "1", "--rounds", "1")  # one client: no start-up burst
    sim = _simulate(capsys, 1, 1)
    assert est["estimate"]["ttft_ms"] == pytest.approx(sim["ttft_s"]["mean"] * 1e3, rel=1e-4)


def test_table_states_the_kv_path(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["estimate", *MODEL, *LEN, "--mode", "disagg", "-c", "1"])
    out, _ = capsys.readouterr()
    assert rc == 0 and "over NVLink (P and D on one node)" in out
