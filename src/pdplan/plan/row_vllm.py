"""InferenceMAX's vLLM MiniMax-M2.5 FP8 launch recipes on Blackwell: which one a row ran."""

from __future__ import annotations

from pdplan.catalog.gpus import get_gpu
from pdplan.errors import PdplanError
from pdplan.perf.measured import MeasuredRow

__all__ = [
    "INFERENCEMAX_MARKERS",
    "MINIMAX_FP8_RECIPES",
    "is_blackwell",
    "is_inferencemax",
    "minimax_fp8_recipe",
    "release",
]

# Rows whose source note names a GitHub workflow run come from InferenceMAX (InferenceX) sweeps.
INFERENCEMAX_MARKERS = ("workflow_run_id=", "wip=")

# InferenceX benchmarks/single_node/minimaxm2.5_fp8_b{2,3}00.sh (SemiAnalysisAI/InferenceX) and
# perf-changelog.yaml, recipe -> (--gpu-memory-utilization, --kv-cache-dtype,
# --max-num-batched-tokens as a multiple of ISL, or None for vLLM's default):
#   "v0.17": PR 757 added the B200 entry on vllm/vllm-openai:v0.17.0 with
#            `--gpu-memory-utilization 0.95` and no KV dtype (BF16, the checkpoint's dtype);
#   "fp8-kv": by PR 1054 (B300 entry, "reuses the existing MiniMax-M2.5 FP8 B200 vLLM recipe
#            as-is", v0.19.0-cu130) the B200 script ran `--gpu-memory-utilization 0.90
#            --kv-cache-dtype fp8 --max-num-batched-tokens $((ISL * 2)) --stream-interval 20`,
#            as every stored B300 version does. PR 947 moved B200 to v0.19.0; its v0.19.0 rows
#            (measured 2026-04-03 and 2026-04-22) read as this recipe: at 8k / 1k, TP2, C = 64
#            they show no KV queue (0.83-0.92 s TTFT), which a BF16 pool at 0.95 (523k tokens
#            against 590k lock-stepped) cannot give and the v0.17.0 rows do show (3.4 s).
# vLLM streams the first token at once whatever --stream-interval (only later ones batch), so
# TTFT and the client's TPOT ((E2E - TTFT) / (OSL - 1)) are not changed by it.
MINIMAX_FP8_RECIPES: dict[str, tuple[float, str, int | None]] = {
    "v0.17": (0.95, "bf16", None),
    "fp8-kv": (0.90, "fp8", 2),
}


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version string such as '0.19.0' / 'v0.15.1'; None if it names
    none (a nightly build, a blank)."""
    parts = version.strip().lstrip("vV").split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def is_inferencemax(row: MeasuredRow) -> bool:
    """Was the row measured by an InferenceMAX sweep (its source note names a workflow run)?"""
    return any(m in row.source for m in INFERENCEMAX_MARKERS)


def is_blackwell(row: MeasuredRow) -> bool:
    """Is the row's GPU a Blackwell part (an NVIDIA GPU with FP4 tensor cores)?"""
    try:
        gpu = get_gpu(row.system)
    except PdplanError:
        return False
    return gpu.vendor == "NVIDIA" and gpu.fp4_tflops is not None


def minimax_fp8_recipe(row: MeasuredRow) -> str | None:
    """The MINIMAX_FP8_RECIPES key of an aggregated InferenceMAX vLLM MiniMax-M2.5 FP8 row on
    a Blackwell GPU, or None (any other row, or a version neither recipe ran on)."""
    if row.backend != "vllm" or row.mode != "agg" or "minimax-m2" not in row.model_path.lower():
        return None
    if not (row.weight_dtype or "").lower().startswith("fp8"):
        return None
    if not (is_inferencemax(row) and is_blackwell(row)):
        return None
    ver = release(row.version)
    if ver == (0, 17):
        return "v0.17"
    return "fp8-kv" if ver is not None and ver >= (0, 19) else None
