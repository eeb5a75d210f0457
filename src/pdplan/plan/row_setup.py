"""How a measured row was launched: its harness, KV-cache dtype, whether its layout can exist."""

from __future__ import annotations

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.model_spec import ModelSpec
from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError, PdplanError
from pdplan.parallel.checks import require_valid
from pdplan.perf.measured import MeasuredRow
from pdplan.plan.row_vllm import (
    INFERENCEMAX_MARKERS,
    MINIMAX_FP8_RECIPES,
    is_blackwell,
    is_inferencemax,
    minimax_fp8_recipe,
    release,
)

__all__ = [
    "INFERENCEMAX_MARKERS",
    "check_row_deployment",
    "check_row_layouts",
    "is_blackwell",
    "is_inferencemax",
    "kv_dtype_for",
    "recipe_mem_fraction",
]


def kv_dtype_for(row: MeasuredRow) -> str:
    """KV cache dtype of a measured setup: TensorRT-LLM quantised checkpoints run an FP8 KV
    cache (AIConfigurator's default kv quant for fp8/fp4 modes); vLLM and SGLang default to
    the model dtype (`--kv-cache-dtype auto`), i.e. BF16, except that SGLang stores a DSA
    model's cache (DeepSeek-V3.2, GLM-5) in fp8_e4m3 on Blackwell (SGLang server_args.py:
    "for Blackwell, we support fp8 only"; Blackwell = an NVIDIA part with FP4 tensor cores).
    InferenceMAX's recipes (InferenceX benchmarks/single_node/**) set `--kv-cache-dtype
    fp8_e4m3` in every SGLang launch of FP8 / FP4 checkpoints on B200 / B300 (DeepSeek-R1,
    GLM-5, Qwen3.5; not its BF16 Qwen3.5 ones, and only for some models on H200 and AMD parts,
    which keep the default), and `kv-cache-dtype: fp8` in its vLLM gpt-oss recipes on
    Blackwell (not H100 / H200); its other vLLM recipes changed over time (MiniMax-M2.5 and
    Kimi-K2.5 gained `--kv-cache-dtype fp8` in later versions) and the rows do not say which
    ran, so their FP8 / BF16 checkpoints keep the default. AMD's "-FP8-KV"
    checkpoints (amd/Llama-3.3-70B-Instruct-FP8-KV) carry KV-cache scales and are served with
    an FP8 cache. So do NVIDIA's NVFP4 checkpoints under vLLM from 0.14 (_vllm_checkpoint_fp8),
    and InferenceMAX's MiniMax-M2.5 FP8 vLLM recipe on Blackwell from v0.19 (row_vllm)."""
    recipe = minimax_fp8_recipe(row)
    if recipe is not None:
        return MINIMAX_FP8_RECIPES[recipe][1]
    if row.model_path.strip().lower().endswith("-fp8-kv"):
        return "fp8"
    if _vllm_checkpoint_fp8(row):
        return "fp8"
    if row.backend == "trtllm" and row.weight_dtype in ("fp8", "fp4", "mxfp4"):
        return "fp8"
    if row.backend == "sglang" and _sglang_dsa_fp8(row):
        return "fp8"
    quantised = row.weight_dtype in ("fp8", "fp4", "mxfp4")
    if row.backend == "sglang" and is_inferencemax(row) and quantised and is_blackwell(row):
        return "fp8"
    if row.backend == "vllm" and is_inferencemax(row) and "gpt-oss" in row.model_path.lower():
        return "fp8" if is_blackwell(row) else "bf16"
    return "bf16"


# vLLM release from which an unset --kv-cache-dtype takes the checkpoint's KV quantisation:
# vllm-project/vllm#30785 (merged 2025-12-16) resolves it from hf_quant_config.json's
# kv_cache_quant_algo when CacheConfig is built, "exactly like you explicitly passed
# --kv-cache-dtype" (by February 2026 vllm#34752 lists the unset case as working). 0.14
# (January 2026) is taken as the first release carrying it: 0.13 was cut about the merge date,
# so its rows are read as before it.
VLLM_CHECKPOINT_KV_FROM = (0, 14)


def _vllm_checkpoint_fp8(row: MeasuredRow) -> bool:
    """A vLLM row on an NVIDIA GPU serving an NVFP4 checkpoint whose FP8 KV directive vLLM
    honours: FP4 weights there are NVIDIA's ModelOpt NVFP4 exports (nvidia/*-NVFP4), whose
    hf_quant_config.json writes kv_cache_quant_algo FP8 (ModelOpt's default KV format for
    NVFP4); gpt-oss's MXFP4 checkpoint carries no such directive. An unknown version (a
    nightly, a blank) is read as recent."""
    if row.backend != "vllm" or row.weight_dtype != "fp4" or "gpt-oss" in row.model_path.lower():
        return False
    try:
        if get_gpu(row.system).vendor.lower() != "nvidia":
            return False
    except PdplanError:
        return False
    ver = release(row.version)
    return ver is None or ver >= VLLM_CHECKPOINT_KV_FROM


# InferenceMAX's SGLang DeepSeek-R1 recipes on B200 / B300 pass --mem-fraction-static (InferenceX
# benchmarks/single_node/fixed_seq_len/dsr1_fp{4,8}_b{2,3}00.sh): FP4 0.85 at every TP and with
# attention DP; FP8 0.82 at TP8 and 0.95 at TP4, which that branch needs: its 157 GiB of FP8
# weights per GPU leave no KV pool under SGLang's own default (0.856 on a B200 at TP4,
# perf.sglang_memory). Fraction of the device, as --mem-fraction-static always is.
_DSR1_MEM_FRACTION = {"fp4": 0.85, ("fp8", 8): 0.82, ("fp8", 4): 0.95}


def recipe_mem_fraction(row: MeasuredRow) -> float | None:
    """The --mem-fraction-static the row's InferenceMAX SGLang recipe passes (or the
    --gpu-memory-utilization of its vLLM MiniMax-M2.5 FP8 recipe, row_vllm), or None (the
    engine's default rule applies)."""
    recipe = minimax_fp8_recipe(row)
    if recipe is not None:
        return MINIMAX_FP8_RECIPES[recipe][0]
    if not (row.backend == "sglang" and is_inferencemax(row) and is_blackwell(row)):
        return None
    name, dtype = row.model_path.lower(), (row.weight_dtype or "").lower()
    if row.layout is None or not ("deepseek-r1" in name or "deepseek-v3" in name):
        return None
    if dtype in ("fp4", "nvfp4"):
        return _DSR1_MEM_FRACTION["fp4"]
    key = ("fp8", row.layout.stage_gpus) if dtype.startswith("fp8") else None
    return _DSR1_MEM_FRACTION.get(key) if key else None


def _sglang_dsa_fp8(row: MeasuredRow) -> bool:
    try:
        mla = get_model(row.model_path).mla
    except PdplanError:
        return False
    return mla is not None and mla.index_topk > 0 and is_blackwell(row)


def check_row_deployment(row: MeasuredRow) -> int:
    """The row's concurrency, once the row says what was deployed and how many clients drove
    it; else ConfigError with the reason: a blank or zero tp_size, worker count or client
    count leaves the deployment unknown, so it is not guessed."""
    if row.mode == "agg":
        if row.layout is None:
            raise ConfigError("row has no layout (tp_size empty or 0)")
        if not row.concurrency:
            raise ConfigError(
                "row has no concurrency (batch_size empty or 0 and no silicon_concurrency "
                "in its source)"
            )
        return row.concurrency
    for role, lay in (("prefill", row.prefill_layout), ("decode", row.decode_layout)):
        if lay is None:
            raise ConfigError(
                f"disaggregated row has no {role} layout ({role}_tp_size empty or 0): "
                "the deployment is not specified"
            )
    if not row.prefill_workers or not row.decode_workers:
        raise ConfigError(
            "disaggregated row without prefill/decode worker counts: "
            "the deployment is not specified"
        )
    if not row.concurrency:
        raise ConfigError(
            "row has no concurrency (no silicon_concurrency in its source and "
            "decode_batch_size empty or 0)"
        )
    return row.concurrency


def check_row_layouts(row: MeasuredRow, model: ModelSpec, gpu: GPUSpec) -> None:
    """Refuse a row whose layout cannot exist as labelled (ConfigError with the reason), e.g.
    "TP=72 does not divide 128 attention heads": such rows (wide attention-DP deployments
    written as TP in some files) describe an unknown deployment, so they are not guessed."""
    for lay in (row.layout, row.prefill_layout, row.decode_layout):
        if lay is not None:
            require_valid(
                model, lay, scaleup_domain=gpu.scaleup_domain, gpus_per_node=gpu.gpus_per_node
            )
    lay = row.layout
    rack = gpu.scaleup_domain > 8  # NVL72-class: one NVLink domain across trays
    if row.mode == "agg" and lay is not None and rack and model.moe is not None:
        # InferenceMAX's GB200 "agg" rows of DeepSeek-R1 read tp 12..72 with moe_tp = tp and
        # no EP: tp is the GPU total of a disaggregated Dynamo run (tp36 = a 4-GPU prefill
        # worker + a 32-GPU wide-EP decode worker; tp12, 20, 28, 36, 52 divide no head count);
        # no engine splits every expert 16+ ways on a rack, so the deployment is unknown.
        if lay.tp > 8 and lay.ep == 1 and (lay.moe_tp or lay.tp) == lay.tp:
            raise ConfigError(
                f"aggregated row with TP={lay.tp} and the experts TP-split {lay.tp} ways "
                f"without EP on {gpu.name}: read as the GPU total of a disaggregated rack-scale "
                "run written as TP; the deployment is not specified"
            )
