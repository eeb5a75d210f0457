"""Hand-built model specs for the parallel tests (catalog lookups are not used in unit tests)."""

from __future__ import annotations

from pdplan.catalog.model_spec import MLASpec, ModelSpec, MoESpec


def llama70b() -> ModelSpec:
    """Llama-3.1-70B: hidden 8192, 80 layers, 64 heads, 8 KV heads of 128 (HF config.json)."""
    return ModelSpec(
        name="llama-3.1-70b",
        hf_id="meta-llama/Llama-3.1-70B-Instruct",
        architecture="LlamaForCausalLM",
        model_type="llama",
        hidden_size=8192,
        num_layers=80,
        num_heads=64,
        num_kv_heads=8,
        head_dim=128,
        intermediate_size=28672,
        vocab_size=128256,
    )


def dsv3() -> ModelSpec:
    """DeepSeek-V3: 61 layers, MLA latent 512 + rope 64, 256 experts top-8, 3 dense layers."""
    return ModelSpec(
        name="deepseek-v3",
        hf_id="deepseek-ai/DeepSeek-V3",
        architecture="DeepseekV3ForCausalLM",
        model_type="deepseek_v3",
        hidden_size=7168,
        num_layers=61,
        num_heads=128,
        num_kv_heads=128,
        head_dim=128,
        intermediate_size=18432,
        vocab_size=129280,
        mla=MLASpec(
            q_lora_rank=1536,
            kv_lora_rank=512,
            qk_nope_head_dim=128,
            qk_rope_head_dim=64,
            v_head_dim=128,
        ),
        moe=MoESpec(
            num_experts=256,
            experts_per_token=8,
            expert_intermediate_size=2048,
            num_shared_experts=1,
            shared_intermediate_size=2048,
            first_dense_layers=3,
        ),
    )
