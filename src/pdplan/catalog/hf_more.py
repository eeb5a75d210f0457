"""Readers for two more per-layer config.json families: Kimi Linear (KDA linear attention +
gated MLA, latent MoE: Kimi-K3) and DeciLM / Nemotron-NAS (per-layer attention and FFN widths:
Llama-3.3-Nemotron-Super-49B)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pdplan.catalog.hf_common import common_fields
from pdplan.catalog.hf_config import _mla
from pdplan.catalog.hf_quant import weight_dtype_from_config
from pdplan.catalog.hf_validate import whole_number_problem
from pdplan.catalog.model_spec import LinearAttnSpec, ModelSpec, MoESpec
from pdplan.errors import InputError

if TYPE_CHECKING:
    from pdplan.catalog.hf_config import _Reader

__all__ = ["MORE_READERS", "decilm_ffn_width", "read_decilm", "read_kimi_linear"]


# ---- Kimi Linear (Kimi-Linear-48B-A3B, Kimi-K3) --------------------------------------------


def _kimi_kinds(r: _Reader, cfg: Mapping[str, Any], n: int) -> tuple[str, ...]:
    """ "linear" (KDA) or "full" (MLA) per 0-based layer. linear_attn_config's lists hold
    1-based layer numbers: layer i is KDA when i + 1 is in kda_layers (vLLM / transformers
    KimiLinearConfig.is_kda_layer); K3's full_attn_layers ends at 93 = num_hidden_layers."""
    kda, full = cfg.get("kda_layers"), cfg.get("full_attn_layers")
    if kda is None and full is None:
        raise r.fail("linear_attn_config lists neither kda_layers nor full_attn_layers")
    kda_set = {int(x) for x in kda or []}
    full_set = {int(x) for x in full or []}
    bad = sorted(x for x in kda_set | full_set if not 1 <= x <= n)
    if bad:
        raise r.fail(f"linear_attn_config layer numbers {bad} outside 1..{n} (they are 1-based)")
    if kda is None:
        kda_set = set(range(1, n + 1)) - full_set
    elif full is not None and (kda_set & full_set or len(kda_set | full_set) != n):
        raise r.fail(f"kda_layers and full_attn_layers must split layers 1..{n} between them")
    return tuple("linear" if i + 1 in kda_set else "full" for i in range(n))


def _kda(r: _Reader, cfg: Mapping[str, Any]) -> LinearAttnSpec:
    """Kimi Delta Attention as a linear-attention layer: H heads of head_dim for q, k and v,
    state H x dk x dv per sequence. vLLM kda_state_dtype keeps the recurrent state in fp32 and
    the conv state in the model dtype (as LinearAttnSpec assumes).

    Parameters (vLLM kimi_linear.py KimiDeltaAttention; K3 reference modeling): q, k, v, the
    output gate g and o_proj (h x H*d each, g full-rank when use_full_rank_gate), beta h x H,
    per-channel decay f_a (h x d) -> f_b (d x H*d), depthwise conv kernel x 3 H*d, dt_bias
    H*d, A_log H. LinearAttnSpec counts Gated DeltaNet's per-head alpha (h x H) in place of
    the low-rank f_a/f_b + dt_bias: for K3 (h 7168, H 96, d 128) 1.81 M short of 443.7 M per
    KDA layer (0.41 %). Without use_full_rank_gate (Kimi-Linear-48B) g is low-rank too
    (h x d -> d x H*d), and the spec's full-rank gate overcounts by about h*H*d (about 20 % of
    that model's KDA layer, 0.3 % of its total).
    """
    missing = [k for k in ("num_heads", "head_dim") if not cfg.get(k)]
    if missing:
        raise r.fail("linear_attn_config missing " + ", ".join(missing))
    heads, dim = int(cfg["num_heads"]), int(cfg["head_dim"])
    return LinearAttnSpec(
        num_key_heads=heads,
        num_value_heads=heads,
        key_head_dim=dim,
        value_head_dim=dim,
        conv_kernel=int(cfg.get("short_conv_kernel_size") or 4),
        state_bytes=4.0,  # fp32 recurrent state (vLLM MambaStateDtypeCalculator.kda_state_dtype)
    )


def _kimi_moe(r: _Reader, n: int) -> tuple[MoESpec | None, tuple[str, ...]]:
    """MoE spec and per-layer FFN kinds. KimiDecoderLayer: MoE where layer_idx >=
    first_k_dense_replace and layer_idx % moe_layer_freq == 0, else the dense MLP of
    intermediate_size. Shared experts are one MLP of moe_intermediate_size * num_shared_experts
    on the hidden size; routed experts see routed_expert_hidden_size-wide tokens behind
    hidden -> latent -> hidden projections (K3 KimiSparseMoeBlock routed_expert_down_proj /
    up_proj; the router reads the full hidden state)."""
    n_exp = int(r.opt("num_experts", "n_routed_experts", default=0) or 0)
    if not n_exp:
        return None, ("dense",) * n
    first = int(r.opt("first_k_dense_replace", default=0) or 0)
    freq = int(r.opt("moe_layer_freq", default=1) or 1)
    width = int(r.req("moe_intermediate_size"))
    n_sh = int(r.opt("num_shared_experts", "n_shared_experts", default=0) or 0)
    moe = MoESpec(
        num_experts=n_exp,
        experts_per_token=int(r.req("num_experts_per_token", "num_experts_per_tok")),
        expert_intermediate_size=width,
        num_shared_experts=n_sh,
        shared_intermediate_size=width if n_sh else 0,
        first_dense_layers=first,
        layer_freq=freq,
        latent_size=int(r.opt("routed_expert_hidden_size", default=0) or 0),
    )
    return moe, tuple("moe" if i >= first and i % freq == 0 else "dense" for i in range(n))


def _experts_only(quant: Mapping[str, Any] | None) -> bool:
    """True when a compressed-tensors config quantizes the routed experts alone: its `ignore`
    list (module regexes left unquantized) names the attention, as K3's does (self_attn,
    shared_experts, the dense mlp and lm_head stay BF16; experts are MXFP4)."""
    ignore = (quant or {}).get("ignore") or []
    return any("self_attn" in str(x) for x in ignore)


def read_kimi_linear(
    r: _Reader, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """Kimi Linear (model_type kimi_linear; Kimi-K3's text_config): KDA linear-attention
    layers and MLA full-attention layers by 1-based number, dense first layers then (latent)
    MoE. `mla_use_output_gate` (K3) adds a sigmoid gate g_proj h x (heads * v_head_dim) to MLA,
    recorded as attn_output_gate. K3's AttnRes residual mixers (two h-vectors per layer) and
    norms are not counted, as no norm is."""
    cfg = r.opt("linear_attn_config")
    if not isinstance(cfg, Mapping):
        raise r.fail("missing linear_attn_config")
    n, h = int(r.req("num_hidden_layers")), int(r.req("hidden_size"))
    heads = int(r.req("num_attention_heads"))
    mla, (moe, ffns) = _mla(r), _kimi_moe(r, n)
    if mla is None:
        raise r.fail("missing kv_lora_rank: Kimi Linear's full-attention layers are MLA")
    r.check()  # layer counts are needed before the per-layer lists are read
    kinds = _kimi_kinds(r, cfg, n)
    fields: dict[str, Any] = {
        "hidden_size": h,
        "num_layers": n,
        "num_heads": heads,
        "num_kv_heads": heads,  # MLA: per-head K/V come out of the one cached latent
        "head_dim": mla.qk_head_dim,
        "intermediate_size": int(r.req("intermediate_size")) if "dense" in ffns else 0,
        "layer_types": kinds,
        "ffn_types": ffns,
        "mla": mla,
        "moe": moe,
        "linear_attn": _kda(r, cfg) if "linear" in kinds else None,
        "attn_output_gate": bool(r.opt("mla_use_output_gate", default=False)),
    }
    common = common_fields(r, quant, name, hf_id, arch)
    if _experts_only(quant):  # experts in the quantized dtype, the rest in torch_dtype
        fields["moe_weight_dtype"] = common["weight_dtype"]
        common["weight_dtype"] = weight_dtype_from_config(
            None, r.opt("torch_dtype", "dtype"), r.fail
        )
    r.check()
    return ModelSpec(**fields, **common)


# ---- DeciLM / Nemotron-NAS (Llama-3.x-Nemotron Super / Ultra, Nemotron-51B) ----------------


def decilm_ffn_width(ffn_mult: float, hidden: int) -> int:
    """FFN width of a DeciLM block: int(2 * ffn_mult * hidden / 3) rounded up to a multiple
    of 256 (modeling_decilm.py _ffn_mult_to_intermediate_size; vLLM / SGLang nemotron_nas.py
    copy it). Super-49B, hidden 8192: 5.25 -> 28672, 1.0 -> 5632, 0.5 -> 2816."""
    width = int(2 * ffn_mult * hidden / 3)
    return -(-width // 256) * 256


def _decilm_attn(
    r: _Reader, i: int, a: Mapping[str, Any], heads: int
) -> tuple[str, int, int | None]:
    """(kind, KV heads, window) of block i's attention. kind "linear" marks replace_with_linear
    (one hidden x hidden matrix, no KV) for the caller to fold into the FFN widths."""
    if a.get("no_op"):
        return "none", 0, None
    if a.get("replace_with_linear"):
        return "linear", 0, None
    group: Any = a.get("n_heads_in_group")  # a JSON value, checked below
    if p := whole_number_problem(f"block_configs[{i}].attention.n_heads_in_group", group):
        raise InputError(p, path=r.where)
    if heads % int(group):
        raise r.fail(f"block_configs[{i}].attention: n_heads_in_group {group} must divide {heads}")
    window: Any = a.get("window_length") or None  # tokens; null / 0: full attention
    if p := whole_number_problem(f"block_configs[{i}].attention.window_length", window or 1):
        raise InputError(p, path=r.where)  # 'abc' raised a bare ValueError, 1.5 was cut to 1
    window = int(window) if window else None
    # GQA: num_key_value_heads = num_attention_heads // n_heads_in_group (DeciLMAttention)
    return ("sliding" if window else "full"), heads // int(group), window


def _decilm_ffn(r: _Reader, i: int, f: Mapping[str, Any], h: int) -> tuple[str, float]:
    """(kind, width) of block i's SwiGLU FFN; replace_with_linear (one h x h matrix = h^2
    params) is a gated FFN of width h / 3 (3 x h x h/3 = h^2)."""
    if f.get("no_op"):
        return "none", 0.0
    if f.get("replace_with_linear"):
        return "dense", h / 3
    if f.get("intermediate_size"):
        if p := whole_number_problem(
            f"block_configs[{i}].ffn.intermediate_size", f["intermediate_size"]
        ):
            raise InputError(p, path=r.where)
        return "dense", float(f["intermediate_size"])
    mult = f.get("ffn_mult")
    if mult is None:
        raise r.fail(f"block_configs[{i}].ffn needs ffn_mult")
    if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
        raise InputError(f"block_configs[{i}].ffn.ffn_mult must be > 0, got {mult!r}", path=r.where)
    return "dense", float(decilm_ffn_width(float(mult), h))


def _decilm_blocks(r: _Reader, n: int) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    raw = r.opt("block_configs")
    if not isinstance(raw, list) or len(raw) != n:
        got = len(raw) if isinstance(raw, list) else 0
        raise r.fail(f"{got} block_configs for num_hidden_layers={n}")
    blocks = []
    for i, b in enumerate(raw):
        a, f = (b.get("attention"), b.get("ffn")) if isinstance(b, Mapping) else (None, None)
        if not isinstance(a, Mapping) or not isinstance(f, Mapping):
            raise r.fail(f"block_configs[{i}] needs attention and ffn objects")
        blocks.append((a, f))
    return blocks


def _decilm_layers(r: _Reader, n: int, h: int, heads: int) -> dict[str, Any]:
    """Per-layer kinds plus the ONE KV-head count, FFN width and window ModelSpec holds.

    KV heads: the mean over attention layers (exact when they agree, as in Super-49B: 8 on
    all 49), so KV bytes per token are exact whenever the mean is whole. FFN width: the
    parameter-weighted mean over FFN layers (sum of widths / count, rounded to whole units,
    so total FFN params are within 3 * h * count / 2; Super-49B: 1,642,496 / 80 = 20531.2 ->
    20531, 393,216 params or 8e-6 of the total). A replace_with_linear attention (h^2 params,
    no KV) becomes a "none" mixer and adds h / 3 to that width sum; with no FFN layer at all
    its params are dropped.
    """
    attn_kinds: list[str] = []
    kv: list[int] = []
    windows: set[int] = set()
    ffn_kinds: list[str] = []
    width_sum = 0.0
    for i, (a, f) in enumerate(_decilm_blocks(r, n)):
        kind, kv_heads, window = _decilm_attn(r, i, a, heads)
        ffn, width = _decilm_ffn(r, i, f, h)
        width_sum += width + (h / 3 if kind == "linear" else 0.0)
        attn_kinds.append("none" if kind == "linear" else kind)
        ffn_kinds.append(ffn)
        kv += [kv_heads] if kv_heads else []
        windows |= {window} if window else set()
    if len(windows) > 1:
        raise r.fail(f"more than one attention window_length: {sorted(windows)}")
    n_ffn = ffn_kinds.count("dense")
    return {
        "num_kv_heads": round(sum(kv) / len(kv)) if kv else 1,
        "intermediate_size": round(width_sum / n_ffn) if n_ffn else 0,
        "layer_types": tuple(attn_kinds),
        "ffn_types": tuple(ffn_kinds),
        "sliding_window": windows.pop() if windows else None,
    }


def read_decilm(
    r: _Reader, quant: dict[str, Any] | None, name: str, hf_id: str, arch: str
) -> ModelSpec:
    """DeciLM / Nemotron-NAS (model_type nemotron-nas): a Llama whose block_configs give each
    layer its own attention (GQA with n_heads_in_group, no_op, or replace_with_linear) and
    SwiGLU FFN (ffn_mult width, no_op, or replace_with_linear) (modeling_decilm.py)."""
    n, h = int(r.req("num_hidden_layers")), int(r.req("hidden_size"))
    heads = int(r.req("num_attention_heads"))
    r.check()  # the per-layer reading below needs these
    fields = {
        "hidden_size": h,
        "num_layers": n,
        "num_heads": heads,
        "head_dim": int(r.opt("head_dim", default=h // max(heads, 1))),
        **_decilm_layers(r, n, h, heads),
    }
    common = common_fields(r, quant, name, hf_id, arch)
    r.check()
    return ModelSpec(**fields, **common)


# model_type -> reader (to be tried before the generic reader, like hf_hybrid.FAMILY_READERS)
MORE_READERS: dict[str, Callable[..., ModelSpec]] = {
    "kimi_linear": read_kimi_linear,
    "nemotron-nas": read_decilm,
}
