"""What a model's KV cache holds per token and per sequence (mixed into ModelSpec)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdplan.catalog.model_parts import dtype_bytes

if TYPE_CHECKING:
    from pdplan.catalog.model_parts import (
        AttnGeom,
        CompressedAttnSpec,
        IndexSpec,
        LinearAttnSpec,
        MLASpec,
    )

__all__ = ["KVCacheMixin"]


class KVCacheMixin:
    """KV-cache sizes of ModelSpec, from its layer kinds and attention specs."""

    if TYPE_CHECKING:  # fields and methods of ModelSpec these use
        layer_types: tuple[str, ...]
        sliding_window: int | None
        mla: MLASpec | None
        csa: CompressedAttnSpec | None
        index: IndexSpec | None
        linear_attn: LinearAttnSpec | None

        def geom(self, kind: str = "full") -> AttnGeom: ...
        def count_layers(self, kind: str) -> int: ...

    def kv_elems_per_token_layer(self, kind: str = "full") -> float:
        """Cached elements per token per layer of this kind (K and V, or the MLA latent)."""
        if kind in ("linear", "none"):
            return 0
        if self.csa is not None:  # K=V entries: one per `ratio` tokens (raw in window layers)
            return self.csa.head_dim / (self.csa.ratio(kind) or 1)
        if self.mla is not None:
            # MLA caches the compressed latent plus the decoupled RoPE key (DeepSeek-V2 paper s2.1);
            # a DSA indexer adds its own key of index_head_dim per token (DeepSeek-V3.2 report)
            a = self.mla
            return a.kv_lora_rank + a.qk_rope_head_dim + a.index_head_dim
        g = self.geom(kind)
        return g.num_kv_heads * g.kv_width  # GQA: K and V (or K=V), n_kv heads each

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
        if kind == "sparse" and self.index is not None:  # + FP8 index key, fp32 scale / 128
            d = self.index.index_head_dim
            return e * dtype_bytes(dtype) + d + 4.0 * -(-d // 128)
        if self.csa is not None:  # a "csa" layer's indexer keys: FP8 + fp32 scale per 128
            c = self.csa
            idx = c.index_head_dim * (1 + 4 / 128) / c.csa_ratio if kind == "csa" else 0.0
            return e * dtype_bytes(dtype) + idx
        a = self.mla
        if a is None or not a.index_head_dim or kind in ("linear", "none"):
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
        return total + self.csa_window_bytes(tokens, dtype) + self.linear_state_bytes()

    def kv_bytes_parts(
        self, dtype: str = "bf16"
    ) -> tuple[float, tuple[tuple[int, float], ...], float]:
        """kv_bytes split by how it grows: (B per token of the layers that grow without bound,
        ((window tokens, B per token inside that window), ...), fixed B per sequence), so that
        kv_bytes(n, dtype) == a * n + sum(b * min(n, w)) + s for every n (up to rounding).
        Windows: sliding layers (`sliding_window`) and DeepSeek-V4's raw K=V of the newest
        csa.window tokens in its compressed layers; the fixed part is the linear-attention
        state. Lets a caller size many sequences without looping over layers each time."""
        windows: dict[int, float]  # window tokens -> B per token inside it
        grow, windows = 0.0, {}
        for kind in self.layer_types:
            e = self.kv_layer_bytes(kind, dtype)
            if kind == "sliding" and self.sliding_window:
                windows[self.sliding_window] = windows.get(self.sliding_window, 0.0) + e
            else:
                grow += e
        if self.csa is not None:
            w = self.csa.window
            windows[w] = windows.get(w, 0.0) + self.csa_window_bytes(1, dtype)
        parts = tuple(sorted((w, b) for w, b in windows.items() if b))
        return grow, parts, self.linear_state_bytes()

    def csa_window_bytes(self, tokens: int, dtype: str = "bf16") -> float:
        """Raw K=V entries (head_dim each) DeepSeek-V4's compressed ("csa"/"hca") layers keep for
        the newest min(tokens, window) tokens of one sequence, B; 0 for other models."""
        if self.csa is None:
            return 0.0
        w = min(tokens, self.csa.window) * self.csa.head_dim * dtype_bytes(dtype)
        return w * sum(1 for k in self.layer_types if k in ("csa", "hca"))

    def linear_state_bytes(self) -> float:
        """Fixed recurrent state of one sequence over all linear-attention layers (fp32 state)."""
        la = self.linear_attn
        n = self.count_layers("linear")
        if la is None or n == 0:
            return 0.0
        # state per layer: Hv * dk * dv (fp32) + conv state (kernel-1)*(2k+v) (bf16)
        k_dim, v_dim = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
        state = la.num_value_heads * la.key_head_dim * la.value_head_dim * la.state_bytes
        conv = (la.conv_kernel - 1) * (2 * k_dim + v_dim) * 2.0
        return n * (state + conv)
