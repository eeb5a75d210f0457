"""Out-of-sample: simulated offline throughput vs TensorRT-LLM's perf overview (unseen GPUs)."""

from __future__ import annotations

import csv
import importlib.util
import math
import statistics
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "validate_trtllm.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("validate_trtllm", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_engine_limits_follow_trtllm_bench_heuristic() -> None:
    v = _module()
    # perf-benchmarking example: Llama-2-7B FP8 on H100, 128/128 -> "Max Runtime Batch Size:
    # 4096, Max Runtime Tokens: 8192" (the KV cache holds more than 4,096 requests)
    assert v.engine_limits(20_000, 128, 128) == (4096, 8192)
    # few requests: batch rounded up to 32 with a floor of 64, tokens floored at 2,048
    assert v.engine_limits(27.3, 128, 2048) == (64, 2048)
    # 300 requests: batch rounded up to 128s; tokens from the unrounded 300 x (1 + 5000 / 500)
    # = 3,300, rounded up to 256s; 4,000 requests x 11 is capped at 32,768
    assert v.engine_limits(300, 5000, 500) == (384, 3328)
    assert v.engine_limits(4000, 5000, 500) == (4096, 32768)


def test_offline_throughput_of_unseen_gpus_and_models() -> None:
    """Every other row of the v0.17 table (A100 FP16, L40S / GH200 / H100 / H200 FP8, Llama 3.1
    8B / 70B / 405B; none was used to fit the efficiencies): the median error stays within
    20 % and no GPU or model is off by more than 35 % at the median."""
    v = _module()
    if not v.TABLE.exists():
        pytest.skip("../shared/data not beside the repository")
    rows = list(csv.DictReader(v.TABLE.open()))[::2]
    errs: dict[str, list[float]] = {}
    for row in rows:
        pred = v.simulate_row(row, "trtllm", {})
        e = math.log(pred / float(row["value"]))
        errs.setdefault(row["gpu"], []).append(e)
        errs.setdefault(row["model"], []).append(e)
    every = [abs(math.exp(e) - 1) for e in errs["LLaMA v3.1 70B"] + errs["LLaMA v3.1 8B"]]
    every += [abs(math.exp(e) - 1) for e in errs["LLaMA v3.1 405B"]]
    assert len(every) == len(rows)
    assert statistics.median(every) <= 0.20
    for key, es in errs.items():
        assert abs(statistics.median(es)) <= math.log(1.35), key
