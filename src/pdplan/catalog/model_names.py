"""Model-name spellings: quantised-checkpoint suffixes, aliases, and fine-tunes by family + size."""

from __future__ import annotations

import re
from functools import cache

from pdplan.catalog.model_presets import MODEL_PRESETS

__all__ = ["ALIASES", "DTYPE_SUFFIXES", "FAMILY_SIZE_NOTE", "PLAIN_SUFFIX", "by_family_size"]

# Checkpoint-name suffixes that name a quantised copy of the same architecture -> weight dtype.
DTYPE_SUFFIXES: dict[str, str] = {
    # AMD Quark checkpoints: MXFP4 weights with FP8 activations (amd/gpt-oss-120b-w-mxfp4-a-fp8)
    # run 4-bit weights on FP8 matrix cores; "-FP8-KV" ships FP8 weights with KV-cache scales
    "-w-mxfp4-a-fp8": "w4a8",
    "-fp8-kv": "fp8",
    "-nvfp4": "fp4",
    "-mxfp4": "mxfp4",
    "-fp4": "fp4",
    "-fp8-dynamic": "fp8",
    # FP8 with static per-tensor scales (AIConfigurator's Qwen/Qwen3-32B-FP8-Static-PerTensor,
    # RedHatAI "-FP8" / "-W8A8-FP8" builds): FP8 weights either way
    "-fp8-static-pertensor": "fp8",
    "-fp8-static": "fp8",
    "-w8a8-fp8": "fp8",
    "-fp8": "fp8",
    "-bf16": "bf16",
    "-int4": "int4",
    "-awq": "int4",
    "-gptq-int4": "int4",  # Qwen's GPTQ releases (Qwen2.5-72B-Instruct-GPTQ-Int4)
    "-gptq": "int4",  # TheBloke-style GPTQ builds: 4-bit unless the name says otherwise
    "-w4a16": "int4",
}
# Suffixes that change only the fine-tune, not the shape (Instruct, v0.1, dated refreshes).
PLAIN_SUFFIX = re.compile(r"-(instruct|base|chat|hf|it|thinking|preview|v\d+([._]\d+)?|\d{4})$")

# Extra spellings that normalisation alone does not reach.
ALIASES: dict[str, str] = {
    "kimi-k2-instruct": "kimi-k2",
    "llama3.1-8b": "llama-3.1-8b",
    "llama3.1-70b": "llama-3.1-70b",
    "llama3.1-405b": "llama-3.1-405b",
    "llama3.3-70b": "llama-3.1-70b",
    "dsr1": "deepseek-r1",  # InferenceMAX's short names
    "qwen3.5-397b": "qwen3.5-397b-a17b",
    "gpt-oss": "gpt-oss-120b",
    # same architecture (identical config.json dimensions), different weights
    "llama-3.3-70b": "llama-3.1-70b",
    "deepseek-v3.1-terminus": "deepseek-v3.1",
    "deepseek-v3.2-exp": "deepseek-v3.2",
    # DeepSeek-V2.5 (-1210) and DeepSeek-Coder-V2 keep DeepSeek-V2's config.json shape (60
    # layers, MLA, 160 routed experts top-6), Coder-V2-Lite V2-Lite's (27 layers, 64 experts)
    "deepseek-v2.5": "deepseek-v2",
    "deepseek-v2.5-1210": "deepseek-v2",
    "deepseek-v2-chat-0628": "deepseek-v2",
    "deepseek-coder-v2": "deepseek-v2",
    "deepseek-coder-v2-lite": "deepseek-v2-lite",
    "qwen3-coder-30b-a3b": "qwen3-30b-a3b",
    # NVIDIA's Nemotron ids carry an "NVIDIA-" prefix and a "-Base-8K" tail
    "nvidia-nemotron-3-nano-30b-a3b": "nemotron-3-nano-30b-a3b",
    "nvidia-nemotron-3-super-120b-a12b": "nemotron-3-super-120b-a12b",
    "nvidia-nemotron-3-ultra-550b-a55b": "nemotron-3-ultra-550b-a55b",
    "nvidia-nemotron-3.5-lightning-30b-a3b": "nemotron-3.5-lightning-30b-a3b",
    "nemotron-h-56b-base-8k": "nemotron-h-56b",
    "llama-3_3-nemotron-super-49b": "llama-3.3-nemotron-super-49b",
    # GLM-4.5 / 4.6 / 4.7 share one 355B-A32B config.json shape (92 layers, 160 experts)
    "glm-4.5": "glm-4.7",
    "glm-4.6": "glm-4.7",
    "kimi-k2-thinking": "kimi-k2",
    # MiniMax-M2 / M2.1 / M2.5 / M2.7 share one 230B-A10B config.json shape (62 layers,
    # 256 experts top-8, 48 query / 8 KV heads of 128; MiniMaxAI model cards)
    "minimax-m2": "minimax-m2.5",
    "minimax-m2.1": "minimax-m2.5",
    # Qwen2.5-Coder / QwQ: the Qwen2.5 shapes (model cards: same layers, heads and params;
    # config.json context 32768, QwQ-32B's 40960 differs only in the context warning)
    "qwen2.5-coder-7b": "qwen2.5-7b",
    "qwen2.5-coder-14b": "qwen2.5-14b",
    "qwen2.5-coder-32b": "qwen2.5-32b",
    "qwq-32b": "qwen2.5-32b",
    # Qwen2 dense models: Qwen2.5 kept their config.json dimensions (layers, hidden, heads, KV
    # heads, FFN width, vocabulary, tied embeddings at 0.5B / 1.5B) at these four sizes
    "qwen2-72b": "qwen2.5-72b",
    "qwen2-7b": "qwen2.5-7b",
    "qwen2-1.5b": "qwen2.5-1.5b",
    "qwen2-0.5b": "qwen2.5-0.5b",
    # DeepSeek-R1 distills of Qwen2.5-Math-7B / Qwen2.5-14B / -32B and Llama-3.1-8B / 3.3-70B
    # (vocab 152064 / 128256, untied); their configs say 131072 context. The 1.5B distill
    # unties its embeddings and has a preset of its own.
    "deepseek-r1-distill-qwen-7b": "qwen2.5-7b",
    "deepseek-r1-distill-qwen-14b": "qwen2.5-14b",
    "deepseek-r1-distill-qwen-32b": "qwen2.5-32b",
    "deepseek-r1-distill-llama-8b": "llama-3.1-8b",
    "deepseek-r1-distill-llama-70b": "llama-3.1-70b",
    "llama2-7b": "llama-2-7b",  # Splitwise / Sarathi spellings
    "llama2-13b": "llama-2-13b",
    "llama2-70b": "llama-2-70b",
    # Mistral-7B v0.1 slides a 4096 window on every layer; v0.2 / v0.3 do not ("mistral-7b")
    "mistral-7b-instruct-v0.1": "mistral-7b-v0.1",
    "mistral-large-instruct-2407": "mistral-large-2407",
    # Large 2411 is the same 123B "Mistral Large 2" (llama.cpp supported it without a change)
    "mistral-large-instruct-2411": "mistral-large-2407",
    "mistral-nemo": "mistral-nemo-12b",
}


_SIZE = re.compile(r"\d+(\.\d+)?b")  # a parameter-count token: "70b", "1.5b", "a3b" is not one
FAMILY_SIZE_NOTE = "not in the catalog"  # how a spec found by by_family_size says so (its source)


@cache
def _sized_keys() -> dict[str, tuple[str, ...]]:
    """Preset keys that carry a parameter count ("llama-3.1-70b", "qwen3-30b-a3b") -> tokens."""
    return {
        k: tuple(k.split("-")) for k in MODEL_PRESETS if any(map(_SIZE.fullmatch, k.split("-")))
    }


def _in_order(need: tuple[str, ...], hay: list[str]) -> bool:
    """The key's family tokens (those before its first size token) side by side in the name,
    then the rest in order after them: "llama-3.1-70b" in "hermes-3-llama-3.1-70b", but not
    "llama-3-70b" in "llama-3.1-tulu-3-70b" (its "llama", "3" are not adjacent there)."""
    cut = next(i for i, tok in enumerate(need) if _SIZE.fullmatch(tok))
    fam, rest = need[:cut], need[cut:]
    for i in range(len(hay) - len(fam) + 1):
        if tuple(hay[i : i + len(fam)]) == fam:
            it = iter(hay[i + len(fam) :])
            if all(tok in it for tok in rest):  # each found after the one before
                return True
    return False


def by_family_size(name: str) -> tuple[str, str | None] | None:
    """A fine-tune or re-release named after its base ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF",
    "NousResearch/Hermes-3-Llama-3.1-8B", "deepseek-ai/DeepSeek-R1-0528-Qwen3-8B"): the one
    preset whose family and size tokens all appear, in order, in the name. Fine-tunes keep
    their base's config.json shape (layers, heads, widths, vocabulary), which is all the cost
    model reads. None when no sized preset or more than one (of equal length) matches."""
    base = re.sub(r"[\s_]+", "-", name.strip().lower()).rsplit("/", 1)[-1]
    dtype = None
    for suffix, dt in DTYPE_SUFFIXES.items():
        if base.endswith(suffix):
            base, dtype = base.removesuffix(suffix), dt
            break
    tokens = base.split("-")
    hits = [k for k, need in _sized_keys().items() if _in_order(need, tokens)]
    longest = max((len(_sized_keys()[k]) for k in hits), default=0)
    hits = [k for k in hits if len(_sized_keys()[k]) == longest]
    return (hits[0], dtype) if len(hits) == 1 else None
