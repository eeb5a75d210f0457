"""Presets of widely served dense models (Qwen2.5, Llama 2 / 3 / 3.2, Mistral, Gemma 2 / 3, Phi).

POPULAR_CONFIGS holds, for each preset, the config.json fields that shape it, copied from public
copies of the model's config.json (named per entry) and cross-checked against a second copy or
the model card. It has the form of tests/catalog/make_model_presets.py EXTRA_CONFIGS
(key -> (HF id, config dict)), so the generator can take it over; the test below checks that the
shipped presets are exactly what the config.json reader gives on these dicts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.models import get_model, resolve_model_name
from pdplan.cli import main


def _dense(
    arch: str, mtype: str, h: int, n: int, heads: int, kv: int, inter: int, vocab: int, ctx: int
) -> dict[str, Any]:
    """The shape keys a dense decoder's config.json carries (the families below add theirs)."""
    return {
        "architectures": [arch],
        "model_type": mtype,
        "hidden_size": h,
        "num_hidden_layers": n,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "vocab_size": vocab,
        "max_position_embeddings": ctx,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def _qwen2(h: int, n: int, heads: int, kv: int, inter: int, vocab: int, **kw: Any) -> dict:
    cfg = _dense("Qwen2ForCausalLM", "qwen2", h, n, heads, kv, inter, vocab, 32768)
    return {**cfg, "use_sliding_window": False, **kw}


def _llama(
    h: int, n: int, heads: int, kv: int, inter: int, vocab: int, ctx: int, **kw: Any
) -> dict:
    return {**_dense("LlamaForCausalLM", "llama", h, n, heads, kv, inter, vocab, ctx), **kw}


def _mistral(
    h: int, n: int, heads: int, kv: int, inter: int, vocab: int, ctx: int, **kw: Any
) -> dict:
    cfg = _dense("MistralForCausalLM", "mistral", h, n, heads, kv, inter, vocab, ctx)
    return {**cfg, "head_dim": 128, "sliding_window": None, **kw}


def _qwen3(h: int, n: int, heads: int, inter: int, **kw: Any) -> dict:
    # Qwen3 dense: 8 KV heads of 128, vocab 151936, 40960 context (NeMo Qwen3Config)
    cfg = _dense("Qwen3ForCausalLM", "qwen3", h, n, heads, 8, inter, 151936, 40960)
    return {**cfg, "head_dim": 128, **kw}


def _phi3(h: int, n: int, heads: int, kv: int, inter: int, vocab: int, ctx: int, **kw: Any) -> dict:
    return {**_dense("Phi3ForCausalLM", "phi3", h, n, heads, kv, inter, vocab, ctx), **kw}


def _deepseek_v2(**kw: Any) -> dict:
    """DeepSeek-V2 (236B-A21B) config.json shape keys; V2-Lite overrides its own."""
    cfg = _dense("DeepseekV2ForCausalLM", "deepseek_v2", 5120, 60, 128, 128, 12288, 102400, 163840)
    mla = {"kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128}
    mla |= {"qk_rope_head_dim": 64, "v_head_dim": 128}
    moe = {"n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6}
    moe |= {"moe_intermediate_size": 1536, "first_k_dense_replace": 1, "moe_layer_freq": 1}
    return {**cfg, **mla, **moe, **kw}


def _glm45_air() -> dict:
    """GLM-4.5-Air config.json shape keys (Glm4MoeForCausalLM, 106B-A12B)."""
    cfg = _dense("Glm4MoeForCausalLM", "glm4_moe", 4096, 46, 96, 8, 10944, 151552, 131072)
    moe = {"n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 8}
    moe |= {"moe_intermediate_size": 1408, "first_k_dense_replace": 1}
    extra = {"head_dim": 128, "attention_bias": True, "partial_rotary_factor": 0.5}
    return {**cfg, **moe, **extra, "num_nextn_predict_layers": 1}


# Sources (public copies of each config.json; "card" = the model's HF model card):
# - GLM-4.5-Air: a config.json copy (a checkpoint conversion script's CONFIG dict:
#   Glm4MoeForCausalLM, 46 layers, 4096 hidden, 96 heads / 8 KV heads of 128, 128 routed experts
#   of 1408 top-8 + 1 shared, 1 dense layer of FFN 10944, vocab 151552, 131072 positions, partial
#   rotary 0.5); one MTP layer (num_nextn_predict_layers) as the GLM-4.5 series ships, the
#   GLM-4.7 config.json in ../shared alike; card: 106B total / 12B active parameters.
# - DeepSeek-V2 / V2-Lite: a DeepSeek-V2 config.json copy (DeepseekV2ForCausalLM, 60 layers,
#   5120 hidden, 128 heads, q / kv LoRA 1536 / 512, 160 routed + 2 shared experts of 1536, top-6,
#   1 dense layer, vocab 102400, 163840 positions) and DeepSeek-V2-Lite-Chat's pinned config
#   (verl's test fixture at revision 85864749: 27 layers, 2048 hidden, 16 heads, no q LoRA,
#   64 routed experts of 1408, FFN 10944), each matching the reference
#   model's own table (deepseek-ai inference configs "16B" / "236B"); cards: 236B total / 21B
#   activated, 15.7B / 2.4B.
# - Qwen2.5: NVIDIA/NeMo nemo/collections/llm/gpt/model/qwen2.py (Qwen25Config*: layers, hidden,
#   heads, KV heads, FFN, vocab) + each Qwen2.5 card (params, layers, heads, tied embeddings for
#   0.5B-3B, "config.json is set for context length up to 32,768 tokens") + mlc-ai/mlc-llm
#   python/mlc_llm/model/model_preset.py (qwen2.5_3b, qwen2_0_5b / qwen2_1_5b / qwen2_7b copies).
# - DeepSeek-R1-Distill-Qwen-1.5B: a config copy (llaisys qwen2 model: 1536/8960/12/2/28, vocab
#   151936, 131072 context, tie_word_embeddings false); its untied LM head matches the card's
#   1.78B params and the q8 LiteRT file being ~0.2 GB larger than Qwen2.5-1.5B-Instruct's.
# - Llama 3.2 / Llama 3 / Llama 2: mlc-llm model_preset.py (llama3_2_1b, llama3_2_3b, llama3_8b,
#   llama3_70b, llama2_*) + NeMo llama.py (Llama32Config1B/3B, Llama3Config8B seq 8192,
#   Llama2Config7B/13B/70B seq 4096) + meta-llama/Llama-2-13b-hf config copy (4096 context).
# - Mistral-7B v0.3 / v0.1: mlc-llm (mistral_7b_v03: sliding_window null, vocab 32768;
#   mistral_7b: 4096 window, vocab 32000) + v0.1 config copy (sliding_window 4096) + the
#   Mistral-7B v0.2/v0.3 cards (no sliding window, 32k context, vocab extended to 32768).
# - Mistral-Small-24B-Instruct-2501: its params.json (OpenMOSE/RWKV-LM-RLHF
#   main/tokenizer/mistralsmall3: dim 5120, 40 layers, head_dim 128, hidden 32768, 32/8 heads,
#   vocab 131072, max_seq_len 32768) + Mistral-Small-3.x text_config copies (same shape).
# - Mistral-Nemo-Instruct-2407 / Mistral-Large-Instruct-2407: NeMo mistral.py
#   (MistralNeMoConfig12B "max_position_embeddings": 1024000, MistralNeMoConfig123B 131072)
#   + Mistral-Nemo-Base-2407 config copy (5120/40/32/8/128/14336, vocab 131072) + Pixtral-Large
#   params.json text part (12288/88/96/8/128/28672, vocab 32768) + mistral-inference README
#   (Large-2407: 32768 vocabulary, Nemo: 128k vocabulary).
# - Gemma 2: mlc-llm (gemma2_9b, gemma2_27b) + NeMo gemma2.py (Gemma2Config9B/27B); layers
#   alternate window / global, even layers sliding (transformers Gemma2 layer_types).
# - Gemma 3: mlc-llm gemma3_1b_it + NeMo gemma3.py (Gemma3Config1B/4B/12B/27B) +
#   google-deepmind gemma configs (gemma3_4b/12b/27b) + TensorRT-LLM gemma-3-27b text_config
#   copy; 5 window layers then 1 global. The 4B/12B/27B config.json text_config omits
#   vocab_size / max_position_embeddings (and heads for 4B/12B): transformers Gemma3TextConfig
#   defaults 262208 / 131072, as NeMo Gemma3Config has them.
# - Phi-4: microsoft/phi-4 config.json copy (OpenMOSE/RWKV-LM-RLHF main/tokenizer/phi-4)
#   + bitnet phi4 config copy. Phi-3.5-mini: mlc-llm phi-3_5 + RWKV-LM-RLHF phi3.5 copy.
# - Qwen3-4B / 14B: NVIDIA NeMo nemo/collections/llm/gpt/model/qwen3.py (Qwen3Config4B: 36
#   layers, 2560 hidden, 32 heads, FFN 9728, tied embeddings; Qwen3Config14B: 40 / 5120 / 40 /
#   17408; base: 8 KV groups of 128, vocab 151936, 40960 positions); its Qwen3Config8B and 32B
#   equal the Qwen3-8B / 32B config.json files in ../shared, which vouches for the source.
POPULAR_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "glm-4.5-air": ("zai-org/GLM-4.5-Air", _glm45_air()),
    "deepseek-v2": ("deepseek-ai/DeepSeek-V2", _deepseek_v2()),
    "deepseek-v2-lite": (
        "deepseek-ai/DeepSeek-V2-Lite",
        _deepseek_v2(
            hidden_size=2048,
            num_hidden_layers=27,
            num_attention_heads=16,
            num_key_value_heads=16,
            intermediate_size=10944,
            q_lora_rank=None,
            n_routed_experts=64,
            moe_intermediate_size=1408,
        ),
    ),
    "qwen2.5-0.5b": (
        "Qwen/Qwen2.5-0.5B-Instruct",
        _qwen2(896, 24, 14, 2, 4864, 151936, tie_word_embeddings=True),
    ),
    "qwen2.5-1.5b": (
        "Qwen/Qwen2.5-1.5B-Instruct",
        _qwen2(1536, 28, 12, 2, 8960, 151936, tie_word_embeddings=True),
    ),
    "qwen2.5-3b": (
        "Qwen/Qwen2.5-3B-Instruct",
        _qwen2(2048, 36, 16, 2, 11008, 151936, tie_word_embeddings=True),
    ),
    "qwen2.5-7b": ("Qwen/Qwen2.5-7B-Instruct", _qwen2(3584, 28, 28, 4, 18944, 152064)),
    "qwen2.5-14b": ("Qwen/Qwen2.5-14B-Instruct", _qwen2(5120, 48, 40, 8, 13824, 152064)),
    "qwen2.5-32b": ("Qwen/Qwen2.5-32B-Instruct", _qwen2(5120, 64, 40, 8, 27648, 152064)),
    "qwen2.5-72b": ("Qwen/Qwen2.5-72B-Instruct", _qwen2(8192, 80, 64, 8, 29568, 152064)),
    "deepseek-r1-distill-qwen-1.5b": (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        _qwen2(1536, 28, 12, 2, 8960, 151936, max_position_embeddings=131072),
    ),
    "llama-3.2-1b": (
        "meta-llama/Llama-3.2-1B-Instruct",
        _llama(2048, 16, 32, 8, 8192, 128256, 131072, head_dim=64, tie_word_embeddings=True),
    ),
    "llama-3.2-3b": (
        "meta-llama/Llama-3.2-3B-Instruct",
        _llama(3072, 28, 24, 8, 8192, 128256, 131072, head_dim=128, tie_word_embeddings=True),
    ),
    "llama-3-8b": (
        "meta-llama/Meta-Llama-3-8B-Instruct",
        _llama(4096, 32, 32, 8, 14336, 128256, 8192),
    ),
    "llama-3-70b": (
        "meta-llama/Meta-Llama-3-70B-Instruct",
        _llama(8192, 80, 64, 8, 28672, 128256, 8192),
    ),
    "llama-2-7b": (
        "meta-llama/Llama-2-7b-chat-hf",
        _llama(4096, 32, 32, 32, 11008, 32000, 4096, torch_dtype="float16"),
    ),
    "llama-2-13b": (
        "meta-llama/Llama-2-13b-chat-hf",
        _llama(5120, 40, 40, 40, 13824, 32000, 4096, torch_dtype="float16"),
    ),
    "llama-2-70b": (
        "meta-llama/Llama-2-70b-chat-hf",
        _llama(8192, 80, 64, 8, 28672, 32000, 4096, torch_dtype="float16"),
    ),
    "mistral-7b": (
        "mistralai/Mistral-7B-Instruct-v0.3",
        _mistral(4096, 32, 32, 8, 14336, 32768, 32768),
    ),
    "mistral-7b-v0.1": (
        "mistralai/Mistral-7B-Instruct-v0.1",
        _mistral(4096, 32, 32, 8, 14336, 32000, 32768, sliding_window=4096),
    ),
    "mistral-small-24b": (
        "mistralai/Mistral-Small-24B-Instruct-2501",
        _mistral(5120, 40, 32, 8, 32768, 131072, 32768),
    ),
    "mistral-nemo-12b": (
        "mistralai/Mistral-Nemo-Instruct-2407",
        _mistral(5120, 40, 32, 8, 14336, 131072, 1024000),
    ),
    "mistral-large-2407": (
        "mistralai/Mistral-Large-Instruct-2407",
        _mistral(12288, 88, 96, 8, 28672, 32768, 131072),
    ),
    "phi-4": ("microsoft/phi-4", _phi3(5120, 40, 40, 10, 17920, 100352, 16384)),
    "phi-3.5-mini": (
        "microsoft/Phi-3.5-mini-instruct",
        _phi3(3072, 32, 32, 32, 8192, 32064, 131072, sliding_window=262144),
    ),
    "qwen3-4b": ("Qwen/Qwen3-4B", _qwen3(2560, 36, 32, 9728, tie_word_embeddings=True)),
    "qwen3-14b": ("Qwen/Qwen3-14B", _qwen3(5120, 40, 40, 17408)),
}

# Gemma 2 / 3: the hub's config.json files leave out layer_types (Gemma 2), vocab_size and
# max_position_embeddings (Gemma 3 4B-27B) and tie_word_embeddings; the reader fills them as
# transformers' Gemma2Config / Gemma3TextConfig do (catalog/hf_geom.py, gemma_defaults).
# key -> (hidden, layers, heads, KV heads, head_dim, FFN, vocab, context, window, pattern)
GEMMA: dict[str, tuple[int, ...]] = {
    "gemma-2-9b": (3584, 42, 16, 8, 256, 14336, 256000, 8192, 4096, 2),
    "gemma-2-27b": (4608, 46, 32, 16, 128, 36864, 256000, 8192, 4096, 2),
    "gemma-3-1b": (1152, 26, 4, 1, 256, 6912, 262144, 32768, 512, 6),
    "gemma-3-4b": (2560, 34, 8, 4, 256, 10240, 262208, 131072, 1024, 6),
    "gemma-3-12b": (3840, 48, 16, 8, 256, 15360, 262208, 131072, 1024, 6),
    "gemma-3-27b": (5376, 62, 32, 16, 128, 21504, 262208, 131072, 1024, 6),
}


def gemma_config(key: str) -> dict[str, Any]:
    """The preset's config.json in the hub's form: only the keys the hub files carry."""
    h, n, heads, kv, hd, inter, vocab, ctx, window, _ = GEMMA[key]
    core = {"hidden_size": h, "num_hidden_layers": n, "num_attention_heads": heads,
            "num_key_value_heads": kv, "head_dim": hd, "intermediate_size": inter,
            "sliding_window": window}  # fmt: skip
    tail = {"vocab_size": vocab, "max_position_embeddings": ctx, "torch_dtype": "bfloat16"}
    if key.startswith("gemma-2"):
        return {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", **core, **tail}
    if key == "gemma-3-1b":
        return {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", **core, **tail}
    text = {"model_type": "gemma3_text", **core}  # 4B-27B: no vocab_size / context given
    return {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
            "text_config": text, "torch_dtype": "bfloat16"}  # fmt: skip


@pytest.mark.parametrize("key", sorted(GEMMA))
def test_the_reader_fills_gemma_defaults_as_transformers_does(key: str) -> None:
    m = get_model(key)
    fresh = model_from_hf_config(gemma_config(key), hf_id=m.hf_id)
    assert dataclasses.replace(fresh, name=key, weight_dtype="bf16") == m


# Total parameters on the model card / HF safetensors header (B). Gemma 3 4B-27B cards count the
# SigLIP vision tower (~0.42B); the preset is the language model, so the text-only total is used
# (card total minus 0.42B). pdplan counts no norms or biases (<0.1 %).
CARD_PARAMS_B: dict[str, float] = {
    "qwen2.5-0.5b": 0.49,
    "qwen2.5-1.5b": 1.54,
    "glm-4.5-air": 106.0,  # card: "106 billion total parameters and 12 billion active"
    "deepseek-v2": 236.0,  # card: "236B total parameters, of which 21B are activated"
    "deepseek-v2-lite": 15.7,  # card: "15.7B total parameters ... 2.4B activated"
    "qwen2.5-3b": 3.09,
    "qwen2.5-7b": 7.61,
    "qwen2.5-14b": 14.7,
    "qwen2.5-32b": 32.5,
    "qwen2.5-72b": 72.7,
    "deepseek-r1-distill-qwen-1.5b": 1.78,
    "llama-3.2-1b": 1.24,
    "llama-3.2-3b": 3.21,
    "llama-3-8b": 8.03,
    "llama-3-70b": 70.6,
    "llama-2-7b": 6.74,
    "llama-2-13b": 13.0,
    "llama-2-70b": 69.0,
    "mistral-7b": 7.25,
    "mistral-7b-v0.1": 7.24,
    "mistral-small-24b": 23.57,
    "mistral-nemo-12b": 12.2,
    "mistral-large-2407": 122.6,
    "gemma-2-9b": 9.24,
    "gemma-2-27b": 27.2,
    "gemma-3-1b": 1.0,
    "gemma-3-4b": 4.3 - 0.42,
    "gemma-3-12b": 12.19 - 0.42,
    "gemma-3-27b": 27.4 - 0.42,
    "phi-4": 14.7,
    "phi-3.5-mini": 3.82,
    "qwen3-4b": 4.0,  # Qwen3-4B card: "Number of Parameters: 4.0B"
    "qwen3-14b": 14.8,  # Qwen3-14B card: "Number of Parameters: 14.8B"
}

NEW_KEYS = sorted([*POPULAR_CONFIGS, *GEMMA])


def test_every_new_preset_has_a_card_count() -> None:
    assert sorted(CARD_PARAMS_B) == NEW_KEYS


@pytest.mark.parametrize("key", NEW_KEYS)
def test_params_match_the_model_card(key: str) -> None:
    m = get_model(key)
    assert m.total_params / 1e9 == pytest.approx(CARD_PARAMS_B[key], rel=0.02), key
    assert m.weight_dtype == "bf16" and m.source.endswith(" config.json") and "/" in m.hf_id


@pytest.mark.parametrize("key", sorted(POPULAR_CONFIGS))
def test_presets_equal_reader_output_on_the_copied_config(key: str) -> None:
    hf_id, cfg = POPULAR_CONFIGS[key]
    fresh = model_from_hf_config(cfg, hf_id=hf_id)
    m = get_model(key)
    assert m.source == f"{hf_id} config.json" and m.hf_id == hf_id
    assert dataclasses.replace(fresh, name=key, weight_dtype="bf16") == m


@pytest.mark.parametrize("key", sorted(GEMMA))
def test_gemma_shapes_and_window_pattern(key: str) -> None:
    h, n, heads, kv, hd, inter, vocab, ctx, window, every = GEMMA[key]
    m = get_model(key)
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.head_dim) == (
        h,
        n,
        heads,
        kv,
        hd,
    )
    assert (m.intermediate_size, m.vocab_size, m.max_position_embeddings) == (inter, vocab, ctx)
    assert m.tie_word_embeddings and m.sliding_window == window
    if every == 2:  # Gemma 2: layer i slides when i is even
        want = tuple("sliding" if i % 2 == 0 else "full" for i in range(n))
    else:  # Gemma 3: every 6th layer global (transformers Gemma3 sliding_window_pattern)
        want = tuple("full" if (i + 1) % every == 0 else "sliding" for i in range(n))
    assert m.layer_types == want


def test_kv_bytes_by_hand() -> None:
    # 2 (K,V) x layers x KV heads x head_dim x 2 B
    assert get_model("qwen2.5-72b").kv_bytes_per_token("bf16") == 2 * 80 * 8 * 128 * 2 == 327_680
    assert get_model("qwen2.5-7b").kv_bytes_per_token("bf16") == 2 * 28 * 4 * 128 * 2
    assert get_model("llama-2-7b").kv_bytes_per_token("bf16") == 2 * 32 * 32 * 128 * 2  # MHA
    assert get_model("llama-3.2-1b").kv_bytes_per_token("bf16") == 2 * 16 * 8 * 64 * 2
    assert get_model("phi-4").kv_bytes_per_token("bf16") == 2 * 40 * 10 * 128 * 2
    assert get_model("mistral-large-2407").kv_bytes_per_token("bf16") == 2 * 88 * 8 * 128 * 2
    # Gemma 3 27B: 10 global layers grow; the 52 window layers hold at most 1024 tokens
    g3 = get_model("gemma-3-27b")
    per_layer = 2 * 16 * 128 * 2
    assert g3.count_layers("full") == 10 and g3.count_layers("sliding") == 52
    assert g3.kv_bytes(8192) == 10 * per_layer * 8192 + 52 * per_layer * 1024
    # Gemma 2 9B: 21 global + 21 window (4096) layers
    g2 = get_model("gemma-2-9b")
    assert g2.kv_bytes(8192) == 21 * 2 * 8 * 256 * 2 * (8192 + 4096)
    # Mistral-7B v0.1 slides on every layer; v0.3 does not
    v01, v03 = get_model("mistral-7b-v0.1"), get_model("mistral-7b")
    assert v01.kv_bytes(32768) == v01.kv_bytes(4096) and v03.kv_bytes(32768) == 8 * v03.kv_bytes(
        4096
    )


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "qwen2.5-0.5b"),
        ("Qwen/Qwen2.5-7B", "qwen2.5-7b"),
        ("Qwen/Qwen2.5-Coder-7B-Instruct", "qwen2.5-7b"),
        ("Qwen/Qwen2.5-Coder-14B-Instruct", "qwen2.5-14b"),
        ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5-32b"),
        ("Qwen/QwQ-32B", "qwen2.5-32b"),
        ("Qwen/QwQ-32B-Preview", "qwen2.5-32b"),
        ("Qwen/Qwen2.5-72B-Instruct-AWQ", "qwen2.5-72b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "deepseek-r1-distill-qwen-1.5b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "qwen2.5-7b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "qwen2.5-14b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen2.5-32b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "llama-3.1-8b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "llama-3.1-70b"),
        ("meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b"),
        ("meta-llama/Llama-3.2-3B-Instruct", "llama-3.2-3b"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
        ("meta-llama/Meta-Llama-3-70B-Instruct", "llama-3-70b"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-70b"),
        ("meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"),
        ("meta-llama/Llama-2-13b-hf", "llama-2-13b"),
        ("meta-llama/Llama-2-70b-chat-hf", "llama-2-70b"),
        ("llama2-70b", "llama-2-70b"),  # Splitwise's name
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
        ("mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b-v0.1"),
        ("mistralai/Mistral-7B-v0.1", "mistral-7b-v0.1"),
        ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-24b"),
        ("mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo-12b"),
        ("mistralai/Mistral-Large-Instruct-2407", "mistral-large-2407"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
        ("google/gemma-2-27b-it", "gemma-2-27b"),
        ("google/gemma-3-1b-it", "gemma-3-1b"),
        ("google/gemma-3-27b-it", "gemma-3-27b"),
        ("microsoft/phi-4", "phi-4"),
        ("microsoft/Phi-3.5-mini-instruct", "phi-3.5-mini"),
    ],
)
def test_hf_ids_and_aliases_resolve(name: str, key: str) -> None:
    m = get_model(name)
    assert m.name == key and m.hf_id == name if "/" in name else m.name == key


def test_quantised_ids_keep_the_shape() -> None:
    assert resolve_model_name("Qwen/Qwen2.5-72B-Instruct-AWQ") == ("qwen2.5-72b", "int4")
    assert resolve_model_name("neuralmagic/Meta-Llama-3-70B-Instruct-FP8") == ("llama-3-70b", "fp8")


@pytest.mark.parametrize(
    "hf_id",
    [
        "Qwen/Qwen2.5-72B-Instruct",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
        "mistralai/Mistral-Large-Instruct-2407",
        "google/gemma-3-27b-it",
        "meta-llama/Llama-2-70b-chat-hf",
    ],
)
def test_estimate_runs(hf_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["estimate", "--model", hf_id, "--gpu", "h100", "--layout", "tp8"])
    out = capsys.readouterr()
    assert rc == 0, out.err


def test_phi4_needs_a_tp_that_divides_its_10_kv_heads(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "microsoft/phi-4", "--gpu", "h100", "--layout", "tp2"]) == 0
    capsys.readouterr()
    assert main(["estimate", "--model", "microsoft/phi-4", "--gpu", "h100", "--layout", "tp8"]) == 2
    assert "does not divide 10 KV heads" in capsys.readouterr().err
