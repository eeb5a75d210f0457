"""`pdplan simulate` moves a lone request's KV in the time `pdplan kv` gives for it: the same
bytes (window-capped, with fixed state), the same sending GPUs (kv_shards: GQA heads over
min(TP, n_kv) ranks, one rank for an MLA latent, one DP rank with attention DP), the same
link efficiency and latency (KV_PATHS)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pdplan.cli import main

TOKENS = 16_000


def _sim_xfer(capsys: pytest.CaptureFixture[str], tmp: Path, model: str, dep: str) -> float:
    rows = tmp / "req.csv"
    rc = main([
        "simulate", "--model", model, "--gpu", "h200", "--deployment", dep, "--json",
        "--workload", f"poisson:rate=0.2,n=2,isl={TOKENS},osl=4", "--requests-out", str(rows),
    ])  # fmt: skip
    capsys.readouterr()
    assert rc == 0
    with rows.open() as f:
        return float(next(csv.DictReader(f))["xfer_s"])


def _kv(capsys: pytest.CaptureFixture[str], model: str, p: str, d: str, path: str) -> dict:
    rc = main([
        "kv", "--model", model, "--tokens", str(TOKENS), "--gpu", "h200", "--path", path,
        "--prefill-layout", p, "--decode-layout", d, "--json",
    ])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    return json.loads(out)


@pytest.mark.parametrize(
    ("model", "p", "d"),
    [
        ("gemma-3-27b", "tp8", "tp8"),  # sliding layers: window-capped bytes
        ("gpt-oss-120b", "tp8", "tp8"),  # half the layers slide over 128 tokens
        ("deepseek-v3", "tp8", "tp8"),  # MLA: one rank sends the latent
        ("deepseek-v3", "dp8-ep8", "dp8-ep8"),  # attention DP: one DP rank holds it
        ("llama-3.1-70b", "tp8", "tp8"),  # GQA over 8 ranks
        ("llama-3.1-70b", "tp8", "tp4"),  # fewer receivers set the time
    ],
)
def test_lone_nic_transfer_matches_pdplan_kv(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: str, p: str, d: str
) -> None:
    """P and D of 8 GPUs on H200 (8 to a node) sit on different nodes: the NICs."""
    sim = _sim_xfer(capsys, tmp_path, model, f"1P:{p}+1D:{d}")
    kv = _kv(capsys, model, p, d, "nic")
    assert sim == pytest.approx(kv["time_s"], rel=0.02)


def test_lone_nvlink_transfer_inside_a_node_matches_pdplan_kv(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two TP4 instances share an 8-GPU node: NVLink (its latency, 10 us, is 0.3 % here)."""
    sim = _sim_xfer(capsys, tmp_path, "llama-3.1-70b", "1P:tp4+1D:tp4")
    kv = _kv(capsys, "llama-3.1-70b", "tp4", "tp4", "nvlink")
    assert sim == pytest.approx(kv["time_s"], rel=0.02)


def test_accuracy_simulate_instances_carry_the_kv_senders_and_link_efficiency() -> None:
    """`pdplan accuracy --simulate` builds its P / D workers as `pdplan simulate` does."""
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.kv_transfer import KV_PATHS, kv_shards
    from pdplan.perf.measured import MeasuredRow
    from pdplan.plan.accuracy_sim import _instances

    p, d = Layout.parse("dp8-ep8"), Layout.parse("tp8")
    row = MeasuredRow(
        1, "r", "sglang", "0.5", "deepseek-ai/DeepSeek-R1", "h200_sxm", "disagg", 4096, 256,
        "fp8", None, 8, None, p, d, 1, 1, None, None, 1000.0, 20.0,
    )  # fmt: skip
    (ps, ds), _ = _instances(row, None)
    model, gpu = get_model("deepseek-r1"), get_gpu("h200")
    assert (ps.kv_senders, ds.kv_senders) == (kv_shards(model, p), kv_shards(model, d)) == (1, 1)
    assert ps.nic_bytes_per_s == pytest.approx(gpu.nic_bytes_per_s * KV_PATHS["nic"]["efficiency"])
