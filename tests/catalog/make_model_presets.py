"""Hand-run generator of src/pdplan/catalog/model_presets.py from the shared HF configs.

Run from the repo root: `python3 tests/catalog/make_model_presets.py && ruff format
src/pdplan/catalog/model_presets.py`. Not shipped and not a test: the package never reads
../shared at run time; this only turns the reader's output into our own preset format.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.model_spec import ModelSpec

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO.parent / "shared" / "data" / "reference" / "hf_configs"
OUT = REPO / "src" / "pdplan" / "catalog" / "model_presets.py"

# preset key -> (config file stem, HF id used when serving, default weight dtype or None = config's)
PRESETS: dict[str, tuple[str, str, str | None]] = {
    "llama-3.1-8b": ("meta-llama--Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", None),
    "llama-3.1-70b": ("meta-llama--Meta-Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", None),
    "llama-3.1-405b": (
        "meta-llama--Meta-Llama-3.1-405B",
        "meta-llama/Llama-3.1-405B-Instruct",
        None,
    ),
    "qwen3-8b": ("Qwen--Qwen3-8B", "Qwen/Qwen3-8B", None),
    "qwen3-32b": ("Qwen--Qwen3-32B", "Qwen/Qwen3-32B", None),
    "qwen3-30b-a3b": ("Qwen--Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", None),
    "qwen3-235b-a22b": ("Qwen--Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", None),
    "qwen3-coder-480b-a35b": (
        "Qwen--Qwen3-Coder-480B-A35B-Instruct",
        "Qwen/Qwen3-Coder-480B-A35B-Instruct",
        None,
    ),
    "qwen3.5-27b": ("Qwen--Qwen3.5-27B", "Qwen/Qwen3.5-27B", None),
    "qwen3.5-35b-a3b": ("Qwen--Qwen3.5-35B-A3B", "Qwen/Qwen3.5-35B-A3B", None),
    "qwen3.5-122b-a10b": ("Qwen--Qwen3.5-122B-A10B", "Qwen/Qwen3.5-122B-A10B", None),
    "qwen3.5-397b-a17b": ("Qwen--Qwen3.5-397B-A17B", "Qwen/Qwen3.5-397B-A17B", None),
    "deepseek-v3": ("deepseek-ai--DeepSeek-V3", "deepseek-ai/DeepSeek-V3", None),
    "deepseek-r1": ("deepseek-ai--DeepSeek-R1", "deepseek-ai/DeepSeek-R1", None),
    # DeepSeek-V3.1 has the V3 shape; only NVIDIA's NVFP4 copy is in the store. The official
    # release (deepseek-ai/DeepSeek-V3.1) is FP8, so the preset's default is fp8.
    "deepseek-v3.1": ("nvidia--DeepSeek-V3.1-NVFP4", "deepseek-ai/DeepSeek-V3.1", "fp8"),
    "deepseek-v3.2": ("deepseek-ai--DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", None),
    "kimi-k2": ("moonshotai--Kimi-K2-Instruct", "moonshotai/Kimi-K2-Instruct", None),
    "kimi-k2.5": ("moonshotai--Kimi-K2.5", "moonshotai/Kimi-K2.5", None),
    "mixtral-8x7b": ("mistralai--Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-v0.1", None),
    "mixtral-8x22b": ("mistralai--Mixtral-8x22B-v0.1", "mistralai/Mixtral-8x22B-v0.1", None),
    "gpt-oss-120b": ("openai--gpt-oss-120b", "openai/gpt-oss-120b", None),
    "gpt-oss-20b": ("openai--gpt-oss-20b", "openai/gpt-oss-20b", None),
    "minimax-m2.5": ("MiniMaxAI--MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.5", None),
    "glm-5": ("zai-org--GLM-5", "zai-org/GLM-5", None),
    "glm-5.1": ("zai-org--GLM-5.1", "zai-org/GLM-5.1", None),
    "glm-5.2": ("zai-org--GLM-5.2", "zai-org/GLM-5.2", None),
    "glm-5.3": ("zai-org--GLM-5.3", "zai-org/GLM-5.3", None),
    "minimax-m2.7": ("MiniMaxAI--MiniMax-M2.7", "MiniMaxAI/MiniMax-M2.7", None),
    # Kimi-K2.6 / K2.7-Code and Qwen3.6: only NVIDIA's NVFP4 copies are in the store; the shape is
    # the config's, the default weights are that copy's (a row or --weight-dtype overrides them).
    "kimi-k2.6": ("nvidia--Kimi-K2.6-NVFP4", "moonshotai/Kimi-K2.6", None),
    "kimi-k2.7-code": ("nvidia--Kimi-K2.7-Code-NVFP4", "moonshotai/Kimi-K2.7-Code", None),
    "qwen3.6-27b": ("nvidia--Qwen3.6-27B-NVFP4", "Qwen/Qwen3.6-27B", None),
    "qwen3.6-35b-a3b": ("nvidia--Qwen3.6-35B-A3B-NVFP4", "Qwen/Qwen3.6-35B-A3B", None),
    "qwen3-0.6b": ("Qwen--Qwen3-0.6B", "Qwen/Qwen3-0.6B", None),
    "qwen3-1.7b": ("Qwen--Qwen3-1.7B", "Qwen/Qwen3-1.7B", None),
    # Qwen3-VL: the language model's shape (the vision tower is not served per token)
    "qwen3-vl-2b": ("Qwen--Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-2B-Instruct", None),
    "qwen3-vl-4b": ("Qwen--Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-4B-Instruct", None),
    "qwen3-vl-8b": ("Qwen--Qwen3-VL-8B-Instruct", "Qwen/Qwen3-VL-8B-Instruct", None),
    "qwen3-vl-32b": ("Qwen--Qwen3-VL-32B-Instruct", "Qwen/Qwen3-VL-32B-Instruct", None),
    "qwen3-vl-30b-a3b": ("Qwen--Qwen3-VL-30B-A3B-Instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct", None),
    "qwen3-vl-235b-a22b": (
        "Qwen--Qwen3-VL-235B-A22B-Instruct",
        "Qwen/Qwen3-VL-235B-A22B-Instruct",
        None,
    ),
    "mimo-7b": ("XiaomiMiMo--MiMo-7B-Base", "XiaomiMiMo/MiMo-7B-Base", None),
    "step-3.7-flash": ("stepfun-ai--Step-3.7-Flash", "stepfun-ai/Step-3.7-Flash", None),
    # Llama 4: chunked local attention + interleaved MoE (catalog/hf_hybrid.py)
    "llama-4-scout-17b-16e": (
        "meta-llama--Llama-4-Scout-17B-16E-Instruct",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        None,
    ),
    "llama-4-maverick-17b-128e": (
        "meta-llama--Llama-4-Maverick-17B-128E-Instruct",
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        None,
    ),
    # Nemotron-H / Nemotron-3: Mamba2 + attention + MLP / (latent) MoE blocks
    "nemotron-3-nano-30b-a3b": (
        "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        None,
    ),
    # Super: only the FP8 / NVFP4 copies are in the store; the BF16 release has the same shape
    "nemotron-3-super-120b-a12b": (
        "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
        None,
    ),
    "nemotron-3-ultra-550b-a55b": (
        "nvidia--NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        None,
    ),
    "nemotron-3.5-lightning-30b-a3b": (
        "nvidia--NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
        "fp4",
    ),
    "nemotron-h-56b": ("nvidia--Nemotron-H-56B-Base-8K", "nvidia/Nemotron-H-56B-Base-8K", None),
    # DeepSeek-V4: compressed sparse attention, FP8 weights with FP4 experts
    "deepseek-v4-flash": ("deepseek-ai--DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Flash", None),
    "deepseek-v4-pro": ("deepseek-ai--DeepSeek-V4-Pro", "deepseek-ai/DeepSeek-V4-Pro", None),
    # window layers with their own head geometry (Gemma 4, MiMo-V2), top-k sparse GQA (MiniMax-M3)
    "gemma-4-26b-a4b": ("google--gemma-4-26B-A4B", "google/gemma-4-26B-A4B", None),
    # Gemma 4 31B: only NVIDIA's NVFP4 copy is in the store; the release is BF16
    "gemma-4-31b": ("nvidia--Gemma-4-31B-IT-NVFP4", "google/gemma-4-31B-it", "bf16"),
    "mimo-v2-flash": ("XiaomiMiMo--MiMo-V2-Flash", "XiaomiMiMo/MiMo-V2-Flash", None),
    "minimax-m3": ("MiniMaxAI--MiniMax-M3", "MiniMaxAI/MiniMax-M3", None),
    # Kimi linear attention + gated MLA, latent MoE (catalog/hf_more.py)
    "kimi-k3": ("moonshotai--Kimi-K3", "moonshotai/Kimi-K3", None),
    # DeciLM / Nemotron-NAS per-layer blocks
    "llama-3.3-nemotron-super-49b": (
        "nvidia--Llama-3_3-Nemotron-Super-49B-v1",
        "nvidia/Llama-3_3-Nemotron-Super-49B-v1",
        None,
    ),
}

# Models whose config.json is not in ../shared: the fields that matter, as published in the
# model's Hugging Face config.json (copies in AIConfigurator's src/aiconfigurator/model_configs).
EXTRA_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "qwen3-next-80b-a3b": (
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        {
            "architectures": ["Qwen3NextForCausalLM"],
            "model_type": "qwen3_next",
            "full_attention_interval": 4,
            "head_dim": 256,
            "hidden_size": 2048,
            "intermediate_size": 5120,
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "linear_value_head_dim": 128,
            "max_position_embeddings": 262144,
            "moe_intermediate_size": 512,
            "num_attention_heads": 16,
            "num_experts": 512,
            "num_experts_per_tok": 10,
            "num_hidden_layers": 48,
            "num_key_value_heads": 2,
            "shared_expert_intermediate_size": 512,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "vocab_size": 151936,
        },
    ),
    "glm-4.7": (
        "zai-org/GLM-4.7",
        {
            "architectures": ["Glm4MoeForCausalLM"],
            "model_type": "glm4_moe",
            "num_hidden_layers": 92,
            "hidden_size": 5120,
            "num_attention_heads": 96,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 12288,
            "vocab_size": 151552,
            "max_position_embeddings": 202752,
            "n_routed_experts": 160,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 1536,
            "first_k_dense_replace": 3,
            "num_nextn_predict_layers": 1,
            "torch_dtype": "bfloat16",
            "tie_word_embeddings": False,
        },
    ),
    "glm-4.7-flash": (
        "zai-org/GLM-4.7-Flash",
        {
            "architectures": ["Glm4MoeLiteForCausalLM"],
            "model_type": "glm4_moe_lite",
            "num_hidden_layers": 47,
            "hidden_size": 2048,
            "num_attention_heads": 20,
            "num_key_value_heads": 20,
            "head_dim": 64,
            "intermediate_size": 10240,
            "vocab_size": 154880,
            "max_position_embeddings": 202752,
            "n_routed_experts": 64,
            "n_shared_experts": 1,
            "num_experts_per_tok": 4,
            "moe_intermediate_size": 1536,
            "first_k_dense_replace": 1,
            "kv_lora_rank": 512,
            "q_lora_rank": 768,
            "qk_nope_head_dim": 192,
            "qk_rope_head_dim": 64,
            "v_head_dim": 256,
            "torch_dtype": "bfloat16",
            "tie_word_embeddings": False,
        },
    ),
}

_SKIP = {"name", "hf_id", "source", "layer_types", "ffn_types", "weight_dtype"}


def _pattern(types: tuple[str, ...]) -> list[str] | None:
    """Shortest cycle that repeats to `types`; None when every layer is full attention."""
    if all(t == "full" for t in types):
        return None
    for p in range(1, len(types) + 1):
        if all(types[i] == types[i % p] for i in range(len(types))):
            return list(types[:p])
    return list(types)


def _compact(pattern: list[str]) -> list[str] | str:
    """Long patterns as one space-separated string (one line in the generated file)."""
    return " ".join(pattern) if len(pattern) > 8 else pattern


def _cycle(types: tuple[str, ...]) -> list[str]:
    """Shortest prefix that repeats to `types`."""
    for p in range(1, len(types) + 1):
        if all(types[i] == types[i % p] for i in range(len(types))):
            return list(types[:p])
    return list(types)


def preset_dict(spec: ModelSpec, hf_id: str, dtype: str | None, stem: str) -> dict[str, Any]:
    """Our preset format: flat scalar fields, nested mla/moe/linear_attn, a layer pattern."""
    d: dict[str, Any] = {"hf_id": hf_id, "source": stem.replace("--", "/", 1) + " config.json"}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        if f.name in _SKIP or v is None or v == f.default:
            continue
        d[f.name] = dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v
    pat = _pattern(spec.layer_types)
    if pat:
        d["layer_pattern"] = _compact(pat)
    if spec.ffn_types:
        d["ffn_pattern"] = _compact(_cycle(spec.ffn_types))
    d["weight_dtype"] = dtype or spec.weight_dtype
    if dtype:  # another release than the source copy (deepseek-v3.1): not the copy's KV dtype
        d.pop("kv_cache_dtype", None)
    return d


def main() -> None:
    out: dict[str, dict[str, Any]] = {}
    for key, (stem, hf_id, dtype) in PRESETS.items():
        spec = model_from_hf_config(CONFIGS / f"{stem}_config.json")
        out[key] = preset_dict(spec, hf_id, dtype, stem)
    for key, (hf_id, cfg) in EXTRA_CONFIGS.items():
        spec = model_from_hf_config(cfg, hf_id=hf_id)
        out[key] = preset_dict(spec, hf_id, None, hf_id.replace("/", "--", 1))
    head = (
        '"""Built-in model presets, generated once from public HF config.json files."""\n\n'
        "# Generated by tests/catalog/make_model_presets.py from each model's public config.json\n"
        "# (copies in aiconfigurator-core 0.12.0, Apache-2.0); every entry names its source.\n"
        "# Fields are ModelSpec's; layer_pattern repeats to num_layers. Edit by regenerating.\n\n"
        "from __future__ import annotations\n\nfrom typing import Any\n\n"
        '__all__ = ["MODEL_PRESETS"]\n\n'
    )
    OUT.write_text(head + f"MODEL_PRESETS: dict[str, dict[str, Any]] = {out!r}\n")
    print(f"wrote {len(out)} presets to {OUT}")


if __name__ == "__main__":
    main()
