"""Efficiency factors and overheads of the cost model, kept as data per engine and GPU."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from pdplan.errors import ConfigError

__all__ = [
    "ENGINES",
    "ENGINE_ALIASES",
    "FIT_MATMUL_ETA",
    "Efficiency",
    "canonical_engine",
    "check_engine_vendor",
    "check_kv_cache_dtype",
    "efficiency_overrides",
    "get_efficiency",
    "matmul_scale",
    "set_efficiency_overrides",
    "vendor_caveat",
]

# Measured MAMF / BF16 peak of the GPUs whose rows the efficiencies were fitted on: H100 / H200
# 794.5 / 989 = 0.803, B200 1745 / 2250 = 0.776, B300 1769 / 2250 = 0.786 (Bekman's ML
# Engineering MAMF table, via reference/gpus.csv); the lowest, so that none of them moves.
FIT_MATMUL_ETA = 1745 / 2250  # B200, 0.7756

ENGINES = ("vllm", "sglang", "trtllm")
# Other names rows and users give the same engines. ATOM (ROCm/ATOM, AMD's AITER-based
# engine in InferenceMAX's MI355X recipes) describes itself as "a lightweight vLLM-like
# implementation": same V1-style scheduler (chunked prefill mixed with decode), so it takes
# vLLM's scheduling model and efficiencies.
ENGINE_ALIASES = {
    "tensorrt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
    "trt-llm": "trtllm",
    "trt": "trtllm",
    "sgl": "sglang",
    "atom": "vllm",
}


def canonical_engine(engine: str) -> str:
    """vllm, sglang or trtllm for a name or alias; ConfigError for an unknown engine.

    Compound names that wrap one engine resolve to it: an orchestrator or transport around it
    ("dynamo-trt", "dynamo-sglang": NVIDIA Dynamo over TensorRT-LLM / SGLang; "mori-sglang":
    SGLang with AMD's MoRI transfer library) or a build or mode of it ("sglang-rocm",
    "vllm-rocm", "trtllm-serve", "sglang-disagg"), as InferenceMAX names its frameworks."""
    eng = engine.strip().lower()
    eng = ENGINE_ALIASES.get(eng, eng)
    if eng not in ENGINES:
        names = (*ENGINES, *ENGINE_ALIASES)  # each as a whole word of the compound name
        hits = {
            ENGINE_ALIASES.get(n, n)
            for n in names
            if re.search(rf"(^|[-_\s/+]){re.escape(n)}($|[-_\s/+])", eng)
        }
        if len(hits) != 1:
            raise ConfigError(f"unknown engine {engine!r}; known: {', '.join(names)}")
        eng = hits.pop()
    return eng


def check_engine_vendor(engine: str, gpu_name: str, vendor: str, pre_ampere: bool = False) -> None:
    """Refuse an engine on a GPU it does not run on: TensorRT-LLM is NVIDIA-only and supports
    Ampere and newer (its "Supported Hardware" page: Blackwell, Hopper, Ada, Ampere; not
    Volta / Turing, `pre_ampere`), and an AMD ROCm build (ROCm ATOM, sglang-rocm, vllm-rocm,
    MoRI) resolves to its upstream engine in canonical_engine, which would hide the mismatch
    on another vendor's GPU."""
    name = engine.strip().lower()
    if canonical_engine(name) == "trtllm" and vendor != "NVIDIA":
        raise ConfigError(f"TensorRT-LLM runs only on NVIDIA GPUs; {gpu_name} is {vendor}")
    if canonical_engine(name) == "trtllm" and pre_ampere:
        raise ConfigError(
            f"TensorRT-LLM supports Ampere and newer GPUs; {gpu_name} is Volta / Turing "
            "(use vllm there)"
        )
    if ("rocm" in name or "mori" in name or name == "atom") and vendor != "AMD":
        raise ConfigError(f"engine {engine!r} is an AMD ROCm build; {gpu_name} is {vendor}")


def vendor_caveat(gpu_name: str, vendor: str, pre_ampere: bool = False) -> str | None:
    """A caution for a GPU of a vendor the efficiencies were not fitted on (every measured
    row behind them ran on NVIDIA parts), with what published runs showed there
    (benchmarks/external_serving.csv, benchmarks/README.md's twenty-eighth pass); None on
    NVIDIA from Ampere on. A pre-Ampere NVIDIA part (Volta / Turing) gets one too: no
    measured row ran there, and FlashAttention-2, which the engines' fitted attention rates
    come from, needs SM 8.0+ (Dao, FlashAttention-2 README: Ampere, Ada, Hopper)."""
    if vendor == "NVIDIA" and pre_ampere:
        return (
            f"{gpu_name} (Volta / Turing): the cost model's efficiencies were fitted on Hopper "
            "and Blackwell runs, and FlashAttention-2 kernels need Ampere or newer (engines "
            "fall back to slower attention backends here); no measured run checked this "
            "part, so read its latencies as optimistic"
        )
    if vendor == "NVIDIA":
        return None
    seen = (
        "; published SGLang 0.5.5 DeepSeek-R1 FP8 runs on MI300X / MI325X (InferenceMAX) "
        "measure about 2x the TPOT this model gives and MI355X runs about 1.2x, so read "
        "its latencies as optimistic"
        if vendor == "AMD"
        else "; no published run on this vendor's parts has checked them"
    )
    return f"{gpu_name} ({vendor}): the cost model's efficiencies were fitted on NVIDIA runs{seen}"


@dataclass(frozen=True)
class Efficiency:
    """See perf/data/efficiency.yaml for each field's meaning, unit, source and bounds."""

    gemm_eta: float = 0.78
    gemm_m_half: float = 48.0
    mem_eta: float = 0.80
    fp8_stream_eta: float = 0.9
    attn_eta: float = 0.55
    attn_mem_eta: float = 0.70
    moe_eta: float = 0.80
    kernel_s: float = 2.5e-6
    kernels_per_layer: float = 14.0
    indexer_kernels: float = 11.0
    moe_kernels: float = 0.0
    shared_expert_kernels: float = 0.0
    mla_kernels: float = 0.0
    step_s: float = 1.5e-3
    seq_s: float = 5e-6
    prompt_token_s: float = 0.0
    coll_alpha_s: float = 8e-6
    coll_eta: float = 0.75
    nic_eta: float = 0.85
    nic_alpha_s: float = 2e-5
    prefill_chunk: int = 8192
    chunk_per_dp_rank: bool = True
    max_seqs: int = 1024
    chunked: bool = True
    bench_rounds: float = 2.0
    ttft_overhead_s: float = 0.03
    ttft_decode_steps: float = 0.0
    pd_handoff_s: float = 0.03
    frontend_s: float = 0.0
    frontend_token_s: float = 0.0

    def with_(self, **kw: Any) -> Efficiency:
        """A copy with some fields replaced; values are coerced to the field's type."""
        known = {f.name: type(getattr(self, f.name)) for f in fields(self)}
        bad = set(kw) - set(known)
        if bad:
            raise ConfigError(f"unknown efficiency field(s): {', '.join(sorted(bad))}")
        try:
            vals = {
                k: known[k](float(v)) if known[k] is not bool else bool(v) for k, v in kw.items()
            }
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"efficiency value is not a number: {exc}") from None
        return replace(self, **vals)


# The user's overlay (`pdplan --efficiency-file`, perf/efficiency_file.py): engine -> fields,
# with an optional `gpus: {gpu: {fields}}`; applied over the packaged values, engine fields
# first, then the GPU's. Empty: the packaged table alone. A plain dict, read per call (no cache
# holds an Efficiency: every CostModel takes get_efficiency's fresh result).
_OVERRIDES: dict[str, dict[str, Any]] = {}


def set_efficiency_overrides(table: dict[str, dict[str, Any]] | None) -> None:
    """Replace the overlay with `table` ({engine: {field: value, gpus: {gpu: {...}}}}, as
    load_efficiency_file returns); None or {} restores the packaged values alone."""
    _OVERRIDES.clear()
    _OVERRIDES.update({canonical_engine(k): dict(v) for k, v in (table or {}).items()})


def efficiency_overrides() -> dict[str, dict[str, Any]]:
    """A copy of the overlay in place (set_efficiency_overrides), {} when none: what
    `pdplan calibrate --out` merges its fitted fields into."""
    return copy.deepcopy(_OVERRIDES)


def _overlaid(eff: Efficiency, eng: str, gpu: str | None) -> Efficiency:
    spec = dict(_OVERRIDES.get(eng, {}))
    per_gpu = spec.pop("gpus", {}) or {}
    eff = eff.with_(**spec)
    return eff.with_(**per_gpu[gpu]) if gpu and gpu in per_gpu else eff


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    text = resources.files("pdplan.perf").joinpath("data/efficiency.yaml").read_text()
    return yaml.safe_load(text)


def get_efficiency(
    engine: str = "vllm", gpu: str | None = None, hbm_gib: float | None = None
) -> Efficiency:
    """Efficiency for `engine` (vllm, sglang, trtllm), with per-GPU overrides when present.

    With the GPU's memory `hbm_gib` known, an engine's `<field>_by_hbm_gib` tables
    ([[below_gib, value], ..., [null, value]]: the first row whose bound exceeds the memory)
    set the defaults the engine picks by GPU memory (token budget, max sequences). The user's
    overlay (set_efficiency_overrides) goes over the packaged values last."""
    eng = canonical_engine(engine)
    tab = _table()
    eff = Efficiency().with_(**tab.get("default", {}))
    spec = dict(tab.get("engines", {}).get(eng, {}) or {})
    per_gpu = spec.pop("gpus", {}) or {}
    by_mem = {
        k[: -len("_by_hbm_gib")]: spec.pop(k) for k in list(spec) if k.endswith("_by_hbm_gib")
    }
    eff = eff.with_(**spec)
    if hbm_gib is not None:
        for name, table in by_mem.items():
            for below, value in table or []:
                if below is None or hbm_gib < float(below):
                    eff = eff.with_(**{name: value})
                    break
    if gpu and gpu in per_gpu:
        eff = eff.with_(**per_gpu[gpu])
    return _overlaid(eff, eng, gpu) if _OVERRIDES else eff


def matmul_scale(matmul_eta: float | None) -> float:
    """Factor on a GPU's peak FLOP/s for every compute efficiency: its measured MAMF / peak
    over the fit GPUs' (FIT_MATMUL_ETA), so a GPU whose matmuls reach a smaller share of its
    datasheet peak runs slower in proportion (MI300X 668.4 / 1307.4 = 0.51: x0.66; GB200
    1822 / 2500 = 0.73: x0.94). Never above 1: the fitted etas already sit at or above the fit
    GPUs' share, so a GPU that reaches more (A100 0.87) is not credited past them; 1 when
    unmeasured."""
    return 1.0 if matmul_eta is None else min(1.0, matmul_eta / FIT_MATMUL_ETA)


# KV-cache element types each engine can store (beyond BF16 / FP16): vLLM --kv-cache-dtype
# auto | bfloat16 | fp8 | fp8_e4m3 | fp8_e5m2 (vllm/config/cache.py CacheDType); SGLang
# auto | bf16 | fp8_e5m2 | fp8_e4m3 | fp4_e2m1 (server_args.py, FP4 on Blackwell); TensorRT-LLM
# KvCacheConfig dtype fp8 | int8 | nvfp4 (QuantAlgo: FP8, INT8 and NVFP4 KV cache).
_KV_CACHE_DTYPES = {
    "vllm": ("bf16", "fp16", "fp8"),
    "sglang": ("bf16", "fp16", "fp8", "fp4"),
    "trtllm": ("bf16", "fp16", "fp8", "int8", "fp4"),
}


def check_kv_cache_dtype(engine: str, kv_dtype: str, gpu_has_fp4: bool) -> None:
    """Refuse a name that is no KV-cache dtype (catalog KV_DTYPES), one the engine cannot
    store, or FP4 KV on a GPU without FP4."""
    from pdplan.catalog.model_parts import canonical_kv_dtype, kv_dtype_bytes

    kv_dtype_bytes(kv_dtype)  # a ConfigError listing the KV dtypes for any other name
    key = canonical_kv_dtype(kv_dtype)
    allowed = _KV_CACHE_DTYPES.get(canonical_engine(engine))
    if allowed is not None and key not in allowed:
        article = "an" if key[:1] in "aefhilmnorsx" else "a"  # as said: an int8, an fp8, a bf16
        raise ConfigError(
            f"{engine} cannot store {article} {kv_dtype} KV cache (it takes {', '.join(allowed)})"
        )
    if key == "fp4" and not gpu_has_fp4:
        raise ConfigError("an FP4 KV cache needs a GPU with FP4 tensor cores (Blackwell)")
