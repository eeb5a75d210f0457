"""The CLIs' default KV dtype is the checkpoint's KV directive (as vLLM >= 0.14 and
TensorRT-LLM serve a checkpoint when no KV dtype is given); --kv-dtype overrides it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pdplan.cli import app
from pdplan.plan.sim_deploy import build_cluster

REF = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "reference" / "hf_configs"
CFG = REF / "nvidia--MiniMax-M2.5-NVFP4_config.json"


@pytest.fixture(autouse=True)
def _needs_configs() -> None:
    if not CFG.is_file():
        pytest.skip("shared hf_configs not present")


def test_kv_takes_the_checkpoints_fp8_unless_told() -> None:
    runner = CliRunner()

    def kv_json(*extra: str) -> dict:
        res = runner.invoke(app, ["kv", "-m", str(CFG), "-n", "1000", "--json", *extra])
        assert res.exit_code == 0, res.output
        return json.loads(res.output)

    auto, bf16 = kv_json(), kv_json("--kv-dtype", "bf16")
    assert auto["kv_dtype"] == "fp8" and bf16["kv_dtype"] == "bf16"
    assert bf16["bytes"] == 2 * auto["bytes"]  # one byte a value instead of two


def test_simulated_pools_hold_the_checkpoints_kv() -> None:
    auto = build_cluster(str(CFG), "b200", "tp2", "vllm")
    bf16 = build_cluster(str(CFG), "b200", "tp2", "vllm", kv_dtype="bf16")
    assert auto.kv_dtype == "fp8" and bf16.kv_dtype == "bf16"
    cap = auto.instances[0].kv_capacity_tokens
    assert cap == pytest.approx(2 * bf16.instances[0].kv_capacity_tokens, rel=0.01)
