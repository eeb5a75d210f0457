"""ModelSpec: a transformer's serving-relevant shape and what follows from it (params, KV)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DTYPE_BYTES",
    "LinearAttnSpec",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "dtype_bytes",
]

# Bytes per element of each storage dtype. FP4 (NVFP4 / MXFP4) is 4 bits = 0.5 B; the
# per-block scale (1 FP8 scale per 16 values for NVFP4, NVIDIA Blackwell docs) adds 1/16 B.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + 1 / 64,  # int4 weight-only with one fp16 scale per 128 values (AWQ/GPTQ g128)
    "fp4": 0.5 + 1 / 16,  # NVFP4: 4-bit values + one FP8 scale per 16-value block
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of `dtype` (bf16, fp16, fp8, int8, int4, fp4, fp32)."""
    key = dtype.lower().replace("nvfp4", "fp4").replace("mxfp4", "fp4")
    if key not in DTYPE_BYTES:
        from pdplan.errors import ConfigError

        raise ConfigError(f"unknown dtype {dtype!r}; known: {', '.join(sorted(DTYPE_BYTES))}")
    return DTYPE_BYTES[key]


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


@dataclass(frozen=True)
class LinearAttnSpec:
    """Linear-attention layers (Qwen3.5 Gated DeltaNet): a fixed-size state, no growing KV."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4


@dataclass(frozen=True)
class ModelSpec:
    """The shape of a decoder-only transformer as far as serving cost is concerned.

    `layer_types[i]` is "full" (global attention), "sliding" (window attention, KV capped at
    `sliding_window` tokens) or "linear" (fixed-size recurrent state, no KV growth).
    """

    name: str
    hf_id: str
    architecture: str
    model_type: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int  # dense FFN width (dense layers / dense models)
    vocab_size: int
    tie_word_embeddings: bool = False
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    mla: MLASpec | None = None
    moe: MoESpec | None = None
    linear_attn: LinearAttnSpec | None = None
    weight_dtype: str = "bf16"  # dtype of the released checkpoint's linear weights
    max_position_embeddings: int = 0
    source: str = ""
    attn_output_gate: bool = False  # Qwen3.5/Qwen3-Next: q_proj also emits a sigmoid gate (2x q)
    num_mtp_layers: int = 0  # multi-token-prediction layers; recorded, not counted in params

    def __post_init__(self) -> None:
        if not self.layer_types:
            object.__setattr__(self, "layer_types", ("full",) * self.num_layers)
        if len(self.layer_types) != self.num_layers:
            from pdplan.errors import ConfigError

            raise ConfigError(
                f"{self.name}: {len(self.layer_types)} layer_types for {self.num_layers} layers"
            )

    # ---- structure -------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def attention_kind(self) -> str:
        return "mla" if self.mla is not None else "gqa"

    def is_moe_layer(self, i: int) -> bool:
        """True when layer i (0-based) has a routed-expert FFN."""
        m = self.moe
        if m is None:
            return False
        if m.moe_layer_ids is not None:
            return i in m.moe_layer_ids
        if i < m.first_dense_layers:
            return False
        return (i - m.first_dense_layers) % m.layer_freq == 0 if m.layer_freq > 1 else True

    @property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    def count_layers(self, kind: str) -> int:
        return sum(1 for t in self.layer_types if t == kind)

    # ---- parameters (weights only; embeddings counted once unless untied) ------------------
    def attn_params(self, kind: str = "full") -> int:
        """Parameters of one attention block of the given kind (projections only)."""
        h = self.hidden_size
        if kind == "linear" and self.linear_attn is not None:
            la = self.linear_attn
            k_dim, v_dim = (
                la.num_key_heads * la.key_head_dim,
                la.num_value_heads * la.value_head_dim,
            )
            # Gated DeltaNet: q,k (k_dim each), v, gate z (v_dim each), beta+alpha (2*Hv), out proj,
            # causal conv over q,k,v (kernel*(2k+v)); Qwen3.5 modeling code.
            proj = h * (2 * k_dim + 2 * v_dim + 2 * la.num_value_heads) + v_dim * h
            return proj + la.conv_kernel * (2 * k_dim + v_dim)
        if self.mla is not None:
            a = self.mla
            nh = self.num_heads
            q = (
                h * a.q_lora_rank + a.q_lora_rank * nh * a.qk_head_dim
                if a.q_lora_rank
                else h * nh * a.qk_head_dim
            )
            kv = h * (a.kv_lora_rank + a.qk_rope_head_dim)
            kv += a.kv_lora_rank * nh * (a.qk_nope_head_dim + a.v_head_dim)
            return q + kv + nh * a.v_head_dim * h + self.indexer_params()
        q = h * self.num_heads * self.head_dim * (2 if self.attn_output_gate else 1)
        kv = 2 * h * self.num_kv_heads * self.head_dim
        return q + kv + self.num_heads * self.head_dim * h

    def indexer_params(self) -> int:
        """One layer's DSA lightning-indexer weights: wq_b (q_lora -> n*d), wk (h -> d),
        weights_proj (h -> n) (DeepSeek-V3.2 inference/model.py Indexer); 0 without one."""
        a = self.mla
        if a is None or not a.index_n_heads:
            return 0
        h = self.hidden_size
        q_in = a.q_lora_rank or h
        return q_in * a.index_n_heads * a.index_head_dim + h * (a.index_head_dim + a.index_n_heads)

    def dense_ffn_params(self) -> int:
        # gated (SwiGLU) FFN: up, gate, down = 3 * h * I
        return 3 * self.hidden_size * self.intermediate_size

    def moe_ffn_params(self, active: bool) -> int:
        """One MoE layer's FFN params: all experts, or only the top-k (+ shared) when active."""
        m = self.moe
        assert m is not None
        h = self.hidden_size
        routed = m.experts_per_token if active else m.num_experts
        experts = routed * 3 * h * m.expert_intermediate_size
        shared = m.num_shared_experts * 3 * h * m.shared_intermediate_size
        router = h * m.num_experts
        return experts + shared + router

    def _params(self, active: bool) -> int:
        total = 0
        for i, kind in enumerate(self.layer_types):
            total += self.attn_params(kind)
            total += (
                self.moe_ffn_params(active) if self.is_moe_layer(i) else self.dense_ffn_params()
            )
        emb = self.vocab_size * self.hidden_size
        total += emb if self.tie_word_embeddings else 2 * emb
        return total

    @property
    def total_params(self) -> int:
        """All weights (embedding + LM head counted unless tied). Excludes MTP heads and norms."""
        return self._params(active=False)

    @property
    def active_params(self) -> int:
        """Weights touched per token: top-k routed + shared experts, all attention, embeddings."""
        return self._params(active=True)

    # ---- KV cache --------------------------------------------------------------------------
    def kv_elems_per_token_layer(self, kind: str = "full") -> int:
        """Cached elements per token per layer of this kind (K and V, or the MLA latent)."""
        if kind == "linear":
            return 0
        if self.mla is not None:
            # MLA caches the compressed latent plus the decoupled RoPE key (DeepSeek-V2 paper s2.1);
            # a DSA indexer adds its own key of index_head_dim per token (DeepSeek-V3.2 report)
            a = self.mla
            return a.kv_lora_rank + a.qk_rope_head_dim + a.index_head_dim
        return 2 * self.num_kv_heads * self.head_dim  # GQA: K and V, n_kv heads of head_dim

    def kv_bytes_per_token(self, dtype: str = "bf16", context: int | None = None) -> float:
        """KV bytes one token adds, averaged over a context of `context` tokens.

        Full-attention layers grow per token: GQA 2*L*n_kv*head_dim*bytes, MLA
        L*(kv_lora_rank + qk_rope_head_dim)*bytes. Sliding layers hold at most `sliding_window`
        tokens, so with `context` given they add window/context of a token's worth; with
        `context=None` they are counted as growing (the value for a context within the window).
        Linear-attention layers hold a fixed state (see `linear_state_bytes`), not per token.
        """
        per_tok = 0.0
        for kind in self.layer_types:
            e = self.kv_layer_bytes(kind, dtype)
            if kind == "sliding" and context is not None and self.sliding_window:
                e = e * min(1.0, self.sliding_window / max(context, 1))
            per_tok += e
        return per_tok

    def kv_layer_bytes(self, kind: str = "full", dtype: str = "bf16") -> float:
        """Cached bytes per token in one layer of this kind with the KV cache in `dtype`. A DSA
        indexer's key is stored in FP8 whatever the KV dtype, with one fp32 scale per 128
        elements (DeepSeek-V3.2 inference/model.py Indexer; SGLang NSATokenToKVPool)."""
        e = self.kv_elems_per_token_layer(kind)
        a = self.mla
        if a is None or not a.index_head_dim or kind == "linear":
            return e * dtype_bytes(dtype)
        idx = a.index_head_dim
        return (e - idx) * dtype_bytes(dtype) + idx * 1.0 + 4.0 * -(-idx // 128)

    def kv_bytes(self, tokens: int, dtype: str = "bf16") -> float:
        """KV bytes of one sequence of `tokens` tokens (window-capped, plus linear state)."""
        total = 0.0
        for kind in self.layer_types:
            e = self.kv_layer_bytes(kind, dtype)
            n = (
                min(tokens, self.sliding_window)
                if kind == "sliding" and self.sliding_window
                else tokens
            )
            total += e * n
        return total + self.linear_state_bytes()

    def linear_state_bytes(self) -> float:
        """Fixed recurrent state of one sequence over all linear-attention layers (fp32 state)."""
        la = self.linear_attn
        n = self.count_layers("linear")
        if la is None or n == 0:
            return 0.0
        # state per layer: Hv * dk * dv (fp32) + conv state (kernel-1)*(2k+v) (bf16)
        k_dim, v_dim = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
        state = la.num_value_heads * la.key_head_dim * la.value_head_dim * 4.0
        conv = (la.conv_kernel - 1) * (2 * k_dim + v_dim) * 2.0
        return n * (state + conv)
