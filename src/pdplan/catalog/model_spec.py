"""ModelSpec: a transformer's serving-relevant shape and what follows from it (params, KV)."""

from __future__ import annotations

from dataclasses import dataclass

from pdplan.catalog.model_kv import KVCacheMixin
from pdplan.catalog.model_parts import (
    _FFN_KINDS,
    _LAYER_KINDS,
    DTYPE_BYTES,
    AttnGeom,
    CompressedAttnSpec,
    IndexSpec,
    LinearAttnSpec,
    MLASpec,
    MoESpec,
    csa_block_params,
    dtype_bytes,
)

__all__ = [
    "DTYPE_BYTES",
    "AttnGeom",
    "CompressedAttnSpec",
    "IndexSpec",
    "LinearAttnSpec",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "dtype_bytes",
]


@dataclass(frozen=True)
class ModelSpec(KVCacheMixin):
    """The shape of a decoder-only transformer as far as serving cost is concerned.

    `layer_types[i]` is "full" (global attention), "sliding" (window attention, KV capped at
    `sliding_window` tokens), "linear" (fixed-size recurrent state, no KV growth: Gated
    DeltaNet, Mamba2) or "none" (no token mixer: an FFN-only block, as in Nemotron-H).
    `ffn_types[i]` is "dense", "moe" or "none" (a mixer-only block); empty means every layer
    has an FFN, routed-expert where `moe` says so (first_dense_layers / layer_freq / ids).
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
    ffn_types: tuple[str, ...] = ()
    # SwiGLU / GeGLU FFNs have gate, up and down matrices (3 h x I); a plain MLP (Nemotron-H's
    # squared ReLU) has up and down only (2 h x I), for dense and expert FFNs alike
    ffn_gated: bool = True
    csa: CompressedAttnSpec | None = None  # DeepSeek-V4 compressed attention ("csa"/"hca")
    # routed experts stored in another dtype than the rest (DeepSeek-V4 expert_dtype fp4)
    moe_weight_dtype: str | None = None
    v_head_dim: int = 0  # value head dim when it differs from head_dim (MiMo-V2: 128 vs 192)
    k_eq_v: bool = False  # full layers project one K=V head set (Gemma 4 attention_k_eq_v)
    sliding_attn: AttnGeom | None = None  # window layers' own head geometry, if different
    index: IndexSpec | None = None  # indexer of "sparse" GQA layers
    # KV-cache dtype the checkpoint asks for (its quantization config's KV directive:
    # catalog.hf_quant.kv_dtype_from_config); None = the model's dtype (BF16)
    kv_cache_dtype: str | None = None

    @property
    def serving_kv_dtype(self) -> str:
        """The KV dtype an engine serves this checkpoint with when none is given: its KV
        directive (FP8 in NVIDIA's NVFP4 / FP8 exports), else BF16."""
        return self.kv_cache_dtype or "bf16"

    def __post_init__(self) -> None:
        from pdplan.errors import ConfigError

        if not self.layer_types:
            object.__setattr__(self, "layer_types", ("full",) * self.num_layers)
        if len(self.layer_types) != self.num_layers:
            raise ConfigError(
                f"{self.name}: {len(self.layer_types)} layer_types for {self.num_layers} layers"
            )
        bad = sorted(set(self.layer_types) - _LAYER_KINDS)
        if bad:
            raise ConfigError(f"{self.name}: unknown layer kinds {', '.join(bad)}")
        if self.ffn_types:
            if len(self.ffn_types) != self.num_layers:
                raise ConfigError(
                    f"{self.name}: {len(self.ffn_types)} ffn_types for {self.num_layers} layers"
                )
            bad = sorted(set(self.ffn_types) - _FFN_KINDS)
            if bad:
                raise ConfigError(f"{self.name}: unknown FFN kinds {', '.join(bad)}")
            if "moe" in self.ffn_types and self.moe is None:
                raise ConfigError(f"{self.name}: MoE layers without a MoE spec")

    # ---- structure -------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def attention_kind(self) -> str:
        if self.csa is not None:
            return "csa"
        return "mla" if self.mla is not None else "gqa"

    def geom(self, kind: str = "full") -> AttnGeom:
        """Head geometry of a GQA attention layer of this kind."""
        if kind == "sliding" and self.sliding_attn is not None:
            return self.sliding_attn
        vd = self.v_head_dim or self.head_dim
        return AttnGeom(self.num_heads, self.num_kv_heads, self.head_dim, vd, self.k_eq_v)

    def default_moe_dtype(self, weight_dtype: str | None = None) -> str:
        """Routed experts' dtype when no row or flag names one: the checkpoint's own expert
        dtype (moe_weight_dtype) unless `weight_dtype` asks for another than the release's."""
        if self.moe_weight_dtype and weight_dtype in (None, self.weight_dtype):
            return self.moe_weight_dtype
        return weight_dtype or self.weight_dtype

    @property
    def ffn_mats(self) -> int:
        """Weight matrices per FFN: 3 (gate, up, down) when gated, else 2 (up, down)."""
        return 3 if self.ffn_gated else 2

    def ffn_kind(self, i: int) -> str:
        """Layer i's FFN: "moe", "dense" or "none"."""
        if self.ffn_types:
            return self.ffn_types[i]
        return "moe" if self.is_moe_layer(i) else "dense"

    def is_moe_layer(self, i: int) -> bool:
        """True when layer i (0-based) has a routed-expert FFN."""
        m = self.moe
        if m is None:
            return False
        if self.ffn_types:
            return self.ffn_types[i] == "moe"
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
        if kind == "none":
            return 0
        if self.csa is not None:
            return csa_block_params(self.csa, h, self.num_heads, kind)
        if kind == "linear" and self.linear_attn is not None:
            la = self.linear_attn
            k_dim, v_dim = (
                la.num_key_heads * la.key_head_dim,
                la.num_value_heads * la.value_head_dim,
            )
            # Gated DeltaNet: q,k (k_dim each), v, gate z (v_dim each), beta+alpha (2*Hv), out proj,
            # causal conv over q,k,v (kernel*(2k+v)); Qwen3.5 modeling code. Mamba2 has the same
            # shape with B, C for q, k and x for v (in_proj h -> 2 d_inner + 2 G d_state + H;
            # transformers NemotronH mixer), one Hv fewer per token: within 0.1 %.
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
            gate = h * nh * a.v_head_dim if self.attn_output_gate else 0  # Kimi-K3 MLA gate
            return q + kv + nh * a.v_head_dim * h + gate + self.indexer_params()
        g = self.geom(kind)
        q = h * g.num_heads * g.head_dim * (2 if self.attn_output_gate else 1)
        kv = h * g.num_kv_heads * g.kv_width
        ix = self.index
        # "sparse": the indexer's query heads and its one key per token (MiniMax-M3 qkv_proj)
        idx = h * (ix.index_n_heads + 1) * ix.index_head_dim if (ix and kind == "sparse") else 0
        return q + kv + g.num_heads * g.v_head_dim * h + idx

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
        # gated (SwiGLU) FFN: up, gate, down = 3 * h * I; plain MLP: up, down = 2 * h * I
        return self.ffn_mats * self.hidden_size * self.intermediate_size

    def moe_ffn_params(self, active: bool) -> int:
        """One MoE layer's FFN params: all experts, or only the top-k (+ shared) when active."""
        m = self.moe
        assert m is not None
        h = self.hidden_size
        routed = m.experts_per_token if active else m.num_experts
        experts = routed * self.ffn_mats * m.expert_dim(h) * m.expert_intermediate_size
        shared = m.num_shared_experts * self.ffn_mats * h * m.shared_intermediate_size
        router = h * m.num_experts
        latent = 2 * h * m.latent_size  # down to the latent and back up
        return experts + shared + router + latent

    def _params(self, active: bool) -> int:
        total = 0
        for i, kind in enumerate(self.layer_types):
            total += self.attn_params(kind)
            ffn = self.ffn_kind(i)
            if ffn == "moe":
                total += self.moe_ffn_params(active)
            elif ffn == "dense":
                total += self.dense_ffn_params()
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
