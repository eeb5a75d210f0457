"""Parts of a model's shape: MLA, MoE and linear-attention specs, and dtype sizes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DTYPE_BYTES",
    "KV_DTYPES",
    "KV_DTYPE_ALIASES",
    "AttnGeom",
    "CompressedAttnSpec",
    "IndexSpec",
    "LinearAttnSpec",
    "MLASpec",
    "MoESpec",
    "canonical_kv_dtype",
    "csa_block_params",
    "dtype_bytes",
    "kv_dtype_bytes",
]

# Bytes per element of each storage dtype. FP4 (NVFP4 / MXFP4) is 4 bits = 0.5 B; the
# per-block scale (1 FP8 scale per 16 values for NVFP4, NVIDIA Blackwell docs) adds 1/16 B.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    # INT8 weight-only (W8A16): int8 weights with per-channel fp16 scales (negligible), GEMMs in
    # BF16 after dequantisation (TensorRT-LLM int8_wo; perf/hardware.py compute_dtype)
    "int8_wo": 1.0,
    "int4": 0.5 + 1 / 64,  # int4 weight-only with one fp16 scale per 128 values (AWQ/GPTQ g128)
    "fp4": 0.5 + 1 / 16,  # NVFP4: 4-bit values + one FP8 scale per 16-value block
    # MXFP4: 4-bit E2M1 values + one E8M0 scale per 32-value block (OCP MX spec v1.0; gpt-oss
    # experts, AMD Quark); GEMMs on FP4 tensor cores where the GPU has them (GPUSpec.tflops)
    "mxfp4": 0.5 + 1 / 32,
    # W4A8: 4-bit weights (MXFP4 E2M1, one E8M0 scale per 32 values, OCP MX spec v1.0) whose
    # GEMMs run on FP8 tensor cores (AIConfigurator w4a8_mxfp4_mxfp8, TensorRT-LLM w4afp8)
    "w4a8": 0.5 + 1 / 32,
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of `dtype` (bf16, fp16, fp8, int8, int4, fp4, fp32)."""
    key = dtype.lower().replace("nvfp4", "fp4")
    if key not in DTYPE_BYTES:
        from pdplan.errors import ConfigError

        raise ConfigError(f"unknown dtype {dtype!r}; known: {', '.join(sorted(DTYPE_BYTES))}")
    return DTYPE_BYTES[key]


# KV-cache dtypes: those some engine stores (perf/efficiency.py check_kv_cache_dtype says which
# engine takes which). DTYPE_BYTES's weight-only formats (int8_wo, int4, mxfp4, w4a8) and fp32
# are no KV-cache dtype of any of them.
KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8", "fp4")


# The engines' own spellings of those (vLLM / SGLang --kv-cache-dtype fp8_e4m3 / fp8_e5m2,
# torch's bfloat16 / float16; TensorRT-LLM's nvfp4): the same bytes per element, so the same KV
# size (e5m2 and e4m3 differ in range and precision, not in size).
KV_DTYPE_ALIASES: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_e4m3fn": "fp8",
    "nvfp4": "fp4",
}


def canonical_kv_dtype(dtype: str) -> str:
    """`dtype` as KV_DTYPES names it: lower case, an engine's alias (KV_DTYPE_ALIASES)
    mapped; any other name is returned as given (lower case) for kv_dtype_bytes to refuse."""
    key = dtype.strip().lower()
    return KV_DTYPE_ALIASES.get(key, key)


def kv_dtype_bytes(dtype: str) -> float:
    """Bytes per element of a KV cache in `dtype` (one of KV_DTYPES or an alias); a
    ConfigError listing KV_DTYPES for any other name, a weight-only dtype's too."""
    key = canonical_kv_dtype(dtype)
    if key not in KV_DTYPES:
        from pdplan.errors import ConfigError

        hint = " (fp8 is any 8-bit float KV: fp8_e4m3, fp8_e5m2)" if key.startswith("fp8") else ""
        raise ConfigError(
            f"unknown KV cache dtype {dtype!r}; use one of {', '.join(KV_DTYPES)}{hint}"
        )
    return DTYPE_BYTES[key]


# "csa" / "hca": DeepSeek-V4 compressed attention with / without an indexer (CompressedAttnSpec)
# "sparse": GQA attention reading only an indexer's top-k keys (MiniMax-M3; IndexSpec)
_LAYER_KINDS = frozenset({"full", "sliding", "linear", "none", "csa", "hca", "sparse"})
_FFN_KINDS = frozenset({"dense", "moe", "none"})


@dataclass(frozen=True)
class IndexSpec:
    """A lightning indexer on GQA layers of kind "sparse" (MiniMax-M3 sparse_attention_config):
    index_n_heads query heads of index_head_dim score every earlier key against one index key
    per token; each query then attends only its top index_topk keys (top blocks x block)."""

    index_n_heads: int
    index_head_dim: int
    index_topk: int


@dataclass(frozen=True)
class AttnGeom:
    """Head geometry of one kind of attention layer (GQA). Models whose sliding and full layers
    differ (Gemma 4: 256-dim sliding heads, 512-dim K=V global heads; MiMo-V2: other KV head
    counts on its window layers) carry one per kind."""

    num_heads: int
    num_kv_heads: int
    head_dim: int  # query / key head dim
    v_head_dim: int  # value head dim
    k_eq_v: bool = False  # one projection serves as K and V, cached once (Gemma 4 global)

    @property
    def kv_width(self) -> int:
        """Cached elements per token per KV head: K and V, or the shared K=V."""
        return self.head_dim + (0 if self.k_eq_v else self.v_head_dim)


@dataclass(frozen=True)
class MLASpec:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, GLM-5): low-rank Q and a KV latent."""

    q_lora_rank: int | None  # None: Q is a full projection hidden -> heads*qk_head_dim
    kv_lora_rank: int  # latent width cached per token per layer (512 for DeepSeek-V3)
    qk_nope_head_dim: int
    qk_rope_head_dim: int  # decoupled RoPE key, cached per token per layer (64 for DS-V3)
    v_head_dim: int
    # DSA lightning indexer (DeepSeek-V3.2 / GLM-5): index_n_heads heads of index_head_dim read a
    # per-token key cache of index_head_dim elements per layer; 0 = no indexer.
    index_n_heads: int = 0
    index_head_dim: int = 0
    # DSA: each query attends only the index_topk keys its indexer picks (2048 in DeepSeek-V3.2
    # and GLM-5 config.json); 0 = dense MLA
    index_topk: int = 0

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts FFN: routed top-k experts, optional shared experts, dense first layers."""

    num_experts: int  # routed experts per MoE layer
    experts_per_token: int  # top-k
    expert_intermediate_size: int  # FFN width of one routed expert
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0  # FFN width of ONE shared expert
    first_dense_layers: int = 0  # DeepSeek first_k_dense_replace: these layers use a dense FFN
    layer_freq: int = 1  # after the dense layers, every layer_freq-th layer is MoE
    # explicit 0-based MoE layer indices when the pattern is irregular (Qwen mlp_only_layers,
    # per-layer moe_layer_freq lists); None = use first_dense_layers / layer_freq
    moe_layer_ids: tuple[int, ...] | None = None
    # latent MoE (Nemotron-3 Super / Ultra moe_latent_size): routed tokens are projected
    # hidden -> latent before the experts and back after, so experts are latent x I and the
    # all-to-all carries latent-wide tokens; 0 = experts see the hidden size
    latent_size: int = 0

    def expert_dim(self, hidden: int) -> int:
        """Width of the tokens the routed experts see (and EP all-to-alls carry)."""
        return self.latent_size or hidden


@dataclass(frozen=True)
class LinearAttnSpec:
    """Linear-attention layers (Qwen3.5 Gated DeltaNet): a fixed-size state, no growing KV."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4
    state_bytes: float = 4.0  # bytes per recurrent-state element (fp32 unless the config says)


@dataclass(frozen=True)
class CompressedAttnSpec:
    """DeepSeek-V4 attention (reference inference/model.py Attention, Compressor, Indexer).

    One shared K=V head of head_dim per token (MQA) over a sliding window of the last `window`
    raw tokens, plus a cache of compressed entries: every `ratio` tokens fold into one
    head_dim entry. "csa" layers (ratio csa_ratio, 4) keep an indexer that scores every
    compressed entry and attend only its top-k; "hca" layers (hca_ratio, 128) attend all
    their entries; layers with ratio 0 are plain "sliding" window layers. Q is low-rank
    (hidden -> q_lora -> heads x head_dim); the output is grouped low-rank (o_groups groups of
    heads -> o_lora_rank each -> hidden). The residual stream is hc_mult copies wide
    (hyper-connections), mixed before and after each sub-layer.
    """

    head_dim: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    window: int
    csa_ratio: int = 4
    hca_ratio: int = 128
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    hc_mult: int = 1

    def ratio(self, kind: str) -> int:
        """Tokens folded into one compressed entry in a layer of this kind (0: none)."""
        return self.csa_ratio if kind == "csa" else (self.hca_ratio if kind == "hca" else 0)


def csa_block_params(a: CompressedAttnSpec, h: int, heads: int, kind: str) -> int:
    """One DeepSeek-V4 attention block of `kind` with hidden size h: wq_a, wq_b, wkv, grouped
    wo_a / wo_b, the compressor (wkv + wgate, twice as wide when its windows overlap at ratio
    4), the indexer on "csa" layers and the hyper-connection mixers of both sub-layers
    (reference inference/model.py Attention / Compressor / Indexer / Block)."""
    hd = a.head_dim
    q = h * a.q_lora_rank + a.q_lora_rank * heads * hd
    o = heads * hd * a.o_lora_rank + a.o_groups * a.o_lora_rank * h  # wo_a, wo_b
    hc_dim, mix = a.hc_mult * h, (2 + a.hc_mult) * a.hc_mult
    total = q + h * hd + o + 2 * mix * hc_dim  # + hc_attn_fn / hc_ffn_fn
    ratio = a.ratio(kind)
    if ratio:
        total += 2 * h * (1 + (ratio == 4)) * hd  # compressor wkv + wgate
    if kind == "csa" and a.index_n_heads:
        ih, idim = a.index_n_heads, a.index_head_dim
        total += a.q_lora_rank * ih * idim + h * ih + 2 * h * 2 * idim  # wq_b, weights, comp.
    return total
