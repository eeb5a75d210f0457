"""Readers for config.json families whose layers differ by index: Nemotron-H, Llama 4 and
DeepSeek-V4."""

from __future__ import annotations

from typing import Any

from pdplan.catalog.hf_common import common_fields
from pdplan.catalog.hf_validate import whole_number_problem
from pdplan.catalog.model_spec import CompressedAttnSpec, LinearAttnSpec, ModelSpec, MoESpec
from pdplan.errors import InputError

__all__ = ["read_deepseek_v4", "read_llama4", "read_nemotron_h"]

# Nemotron-H block letters (transformers NemotronHConfig.hybrid_override_pattern) and the
# spelled-out layers_block_type of newer configs -> (token mixer, FFN) of that block.
_NEMOTRON_BLOCKS: dict[str, tuple[str, str]] = {
    "M": ("linear", "none"),  # Mamba2 mixer
    "*": ("full", "none"),  # attention
    "-": ("none", "dense"),  # MLP
    "E": ("none", "moe"),  # routed-expert MoE
    "mamba": ("linear", "none"),
    "attention": ("full", "none"),
    "mlp": ("none", "dense"),
    "moe": ("none", "moe"),
}


def _nemotron_blocks(r: Any) -> list[tuple[str, str]]:
    raw = r.opt("layers_block_type", "hybrid_override_pattern")
    if not raw:
        raise r.fail("missing hybrid_override_pattern / layers_block_type")
    seq = list(raw) if isinstance(raw, str) else [str(x) for x in raw]
    bad = sorted({b for b in seq if b not in _NEMOTRON_BLOCKS})
    if bad:
        raise r.fail("unknown Nemotron-H blocks " + ", ".join(bad))
    n = r.opt("num_hidden_layers")
    if n is not None and int(n) != len(seq):
        raise r.fail(f"{len(seq)} blocks in the pattern for num_hidden_layers={n}")
    return [_NEMOTRON_BLOCKS[b] for b in seq]


def _nemotron_moe(r: Any) -> MoESpec:
    """Nemotron-3 MoE: routed experts (behind a latent projection in Super / Ultra) and one
    shared expert of moe_shared_expert_intermediate_size."""
    n_sh = int(r.opt("n_shared_experts", default=0) or 0)
    shared = int(r.opt("moe_shared_expert_intermediate_size", default=0)) if n_sh else 0
    return MoESpec(
        num_experts=int(r.req("n_routed_experts")),
        experts_per_token=int(r.req("num_experts_per_tok")),
        expert_intermediate_size=int(r.req("moe_intermediate_size")),
        num_shared_experts=n_sh,
        shared_intermediate_size=shared,
        latent_size=int(r.opt("moe_latent_size", default=0) or 0),
    )


def _mamba2(r: Any) -> LinearAttnSpec:
    """Mamba2 as a linear-attention layer: G groups of B / C (d_state wide) play the keys,
    H heads of head_dim play the values; state H x d_state x head_dim per sequence."""
    return LinearAttnSpec(
        num_key_heads=int(r.req("n_groups")),
        num_value_heads=int(r.req("mamba_num_heads")),
        key_head_dim=int(r.req("ssm_state_size")),
        value_head_dim=int(r.req("mamba_head_dim")),
        conv_kernel=int(r.opt("conv_kernel", default=4)),
        # mamba_ssm_cache_dtype (float32 in the Nemotron-3 configs); absent, vLLM's "auto"
        # keeps the state in the model dtype (BF16)
        state_bytes=4.0 if r.opt("mamba_ssm_cache_dtype") == "float32" else 2.0,
    )


def read_nemotron_h(
    r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """Nemotron-H / Nemotron-3: one block per layer index, each a Mamba2 mixer, an attention
    mixer, a squared-ReLU MLP or a (latent) MoE (transformers modeling_nemotron_h.py)."""
    blocks = _nemotron_blocks(r)
    kinds, ffns = tuple(b[0] for b in blocks), tuple(b[1] for b in blocks)
    h, heads = int(r.req("hidden_size")), int(r.req("num_attention_heads"))
    fields: dict[str, Any] = {
        "hidden_size": h,
        "num_layers": len(blocks),
        "num_heads": heads,
        "num_kv_heads": int(r.req("num_key_value_heads")),
        "head_dim": int(r.opt("head_dim", "attention_head_dim", default=h // max(heads, 1))),
        "intermediate_size": int(r.opt("intermediate_size", default=0) or 0),
        "layer_types": kinds,
        "ffn_types": ffns,
        "moe": _nemotron_moe(r) if "moe" in ffns else None,
        "linear_attn": _mamba2(r),
        "ffn_gated": str(r.opt("mlp_hidden_act", default="relu2")) not in ("relu2", "relu"),
    }
    common = common_fields(r, quant, name, hf_id, arch)
    r.check()
    return ModelSpec(**fields, **common)


def read_llama4(
    r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """Llama 4 (Scout / Maverick): chunked local attention on three of every four layers (a
    token attends only within its attention_chunk_size chunk, so KV is capped like a window)
    and global NoPE attention on every fourth; MoE on every interleave_moe_layer_step-th
    layer with one shared expert, dense SwiGLU of intermediate_size_mlp elsewhere
    (transformers Llama4TextConfig: no_rope_layers, moe_layers)."""
    n = int(r.req("num_hidden_layers"))
    step = int(r.opt("interleave_moe_layer_step", default=1) or 1)
    moe_ids = r.opt("moe_layers") or list(range(step - 1, n, step))
    nope = r.opt("no_rope_layers")  # 1 = RoPE (chunked), 0 = NoPE (global); default every 4th
    if not isinstance(nope, list) or len(nope) != n:
        nope = [
            int((i + 1) % int(r.opt("no_rope_layer_interval", default=4)) != 0) for i in range(n)
        ]
    chunk = r.opt("attention_chunk_size")
    kinds = tuple("sliding" if (rope and chunk) else "full" for rope in nope)
    width = int(r.req("intermediate_size"))
    h, heads = int(r.req("hidden_size")), int(r.req("num_attention_heads"))
    moe = MoESpec(
        num_experts=int(r.req("num_local_experts")),
        experts_per_token=int(r.req("num_experts_per_tok")),
        expert_intermediate_size=width,
        num_shared_experts=1,
        shared_intermediate_size=width,
        moe_layer_ids=tuple(int(i) for i in moe_ids),
    )
    fields: dict[str, Any] = {
        "hidden_size": h,
        "num_layers": n,
        "num_heads": heads,
        "num_kv_heads": int(r.req("num_key_value_heads")),
        "head_dim": int(r.opt("head_dim", default=h // max(heads, 1))),
        "intermediate_size": int(r.opt("intermediate_size_mlp", default=width)),
        "layer_types": kinds,
        "sliding_window": int(chunk) if "sliding" in kinds else None,
        "moe": moe,
    }
    common = common_fields(r, quant, name, hf_id, arch)
    r.check()
    return ModelSpec(**fields, **common)


def _v4_kinds(r: Any, n: int) -> tuple[tuple[str, ...], int]:
    """Layer kinds from compress_ratios (0: window only; 4: with an indexer, "csa"; any other
    single ratio: "hca"; entries past num_hidden_layers belong to the MTP block)."""
    ratios = r.opt("compress_ratios")
    if not isinstance(ratios, list) or len(ratios) < n:
        raise r.fail(f"compress_ratios must list a ratio for each of the {n} layers")
    bad = [x for x in ratios[:n] if whole_number_problem("compress_ratios", x, minimum=0)]
    if bad:
        raise InputError(
            f"compress_ratios must be whole numbers >= 0, got {bad[0]!r}", path=r.where
        )
    ratios = [int(x) for x in ratios[:n]]
    heavy = sorted({x for x in ratios if x not in (0, 4)})
    if len(heavy) > 1:
        raise r.fail(f"more than one heavy compression ratio: {heavy}")
    kinds = tuple("sliding" if x == 0 else ("csa" if x == 4 else "hca") for x in ratios)
    return kinds, (heavy[0] if heavy else 128)


def _v4_attention(r: Any, heavy: int) -> CompressedAttnSpec:
    return CompressedAttnSpec(
        head_dim=int(r.req("head_dim")),
        q_lora_rank=int(r.req("q_lora_rank")),
        o_lora_rank=int(r.req("o_lora_rank")),
        o_groups=int(r.req("o_groups")),
        window=int(r.req("sliding_window")),
        hca_ratio=heavy,
        index_n_heads=int(r.opt("index_n_heads", default=0)),
        index_head_dim=int(r.opt("index_head_dim", default=0)),
        index_topk=int(r.opt("index_topk", default=0)),
        hc_mult=int(r.opt("hc_mult", default=1)),
    )


def read_deepseek_v4(
    r: Any, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """DeepSeek-V4 (Flash / Pro): compressed sparse attention over one K=V head per layer
    (CompressedAttnSpec), MoE on every layer (one shared expert), experts stored in
    expert_dtype (FP4 in the official checkpoints)."""
    n, h = int(r.req("num_hidden_layers")), int(r.req("hidden_size"))
    kinds, heavy = _v4_kinds(r, n)
    csa = _v4_attention(r, heavy)
    width = int(r.req("moe_intermediate_size"))
    moe = MoESpec(
        num_experts=int(r.req("n_routed_experts")),
        experts_per_token=int(r.req("num_experts_per_tok")),
        expert_intermediate_size=width,
        num_shared_experts=int(r.opt("n_shared_experts", default=1)),
        shared_intermediate_size=width,
    )
    # expert_dtype "fp4" stores the experts as MXFP4 (E2M1 + an E8M0 scale per 32); Blackwell
    # runs them as MXFP4 x MXFP8 on FP8 tensor cores (AIConfigurator MoEQuantMode
    # w4a8_mxfp4_mxfp8_trtllm: "the kernel DeepSeek-V4-Pro actually runs"), hence W4A8
    expert = {"fp4": "w4a8", "fp8": "fp8"}.get(str(r.opt("expert_dtype")))
    fields: dict[str, Any] = {
        "hidden_size": h,
        "num_layers": n,
        "num_heads": int(r.req("num_attention_heads")),
        "num_kv_heads": 1,  # one K=V head, replicated on every TP rank
        "head_dim": csa.head_dim,
        "intermediate_size": 0,
        "layer_types": kinds,
        "sliding_window": csa.window,
        "moe": moe,
        "csa": csa,
        "moe_weight_dtype": expert,
    }
    common = common_fields(r, quant, name, hf_id, arch)
    r.check()
    return ModelSpec(**fields, **common)
