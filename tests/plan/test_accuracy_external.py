"""The steady-state estimate on published runs outside ../shared (benchmarks/external_serving.csv):
every row is read and predicted, and TPOT on NVIDIA GPUs under 2025-26 engines stays within 20 %
(median)."""

from __future__ import annotations

import statistics
from pathlib import Path

from pdplan.plan.accuracy import Prediction, run_accuracy

EXTERNAL = Path(__file__).resolve().parents[2] / "benchmarks" / "external_serving.csv"


def _ape(pred: float, meas: float) -> float:
    return abs(pred / meas - 1.0) * 100.0


def test_every_external_row_is_predicted_and_current_nvidia_engines_keep_tpot() -> None:
    preds: list[Prediction] = []
    out = run_accuracy(str(EXTERNAL), mode="agg", collect=preds)
    assert out["predicted"] == len(preds) == 156 and out["skipped"] == 0
    assert all(p.ttft_ms > 0 and p.tpot_ms > 0 for p in preds)
    # NIM 1.8 on H100, vLLM 0.16 on B200, InferenceMAX vLLM 0.13 / SGLang 0.5.6 on H200: the
    # engines and vendor the efficiencies describe. Left out of the bound, and said in
    # benchmarks/README.md (twenty-eighth pass): dstack's Feb-2025 builds (vLLM 0.7, SGLang
    # 0.4, TensorRT-LLM 0.17), 2.5-6x the TPOT, and SGLang 0.5.5 DeepSeek-R1 on MI300X /
    # MI325X, ~2x (ROCm kernels the NVIDIA-fitted efficiencies do not describe).
    current = [
        p for p in preds if "dstack" not in p.row.source and not p.row.system.startswith("mi")
    ]
    assert len(current) == 76
    tpot = statistics.median(_ape(p.tpot_ms, p.row.tpot_ms) for p in current)
    assert tpot < 20.0, f"TPOT median {tpot:.1f} % on published runs of current engines"
