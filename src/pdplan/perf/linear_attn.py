"""Linear-attention / SSM token mixers (Gated DeltaNet, Kimi KDA, Mamba2): one layer's time."""

from __future__ import annotations

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import Efficiency
from pdplan.perf.hardware import Hardware
from pdplan.perf.step import BatchShape

__all__ = ["linear_attn_time", "linear_prefill_flops"]

# Chunk length (tokens) of the chunked-prefill kernels. flash-linear-attention fixes 64 for the
# gated delta rule (fla/ops/gated_delta_rule/chunk.py: chunk_local_cumsum(chunk_size=64), the
# kernel vLLM / SGLang run for Qwen3-Next / Qwen3.5; Kimi KDA's fla/ops/kda/chunk_fwd.py
# chunk_kda_fwd defaults to 64 too, with the same WY / state-passing / output steps). Mamba2
# SSD takes the config's chunk_size (vLLM ModelConfig.get_mamba_chunk_size): 128 in every
# Nemotron-H / Nemotron-3 config (mamba_ssm's own default is 256).
_FLA_CHUNK = 64
_SSD_CHUNK = 128


def linear_prefill_flops(model: ModelSpec) -> float:
    """FLOPs per prompt token of one linear-attention layer's chunked prefill (all heads).

    Per value head, dk = key/state width, dv = value/head width, chunk C (2 FLOPs per MAC):
      Gated DeltaNet (Yang, Kautz & Hatamizadeh, arXiv:2412.06464; FLA
      chunk_gated_delta_rule_fwd): K K^T for the WY/UT transform 2*C*dk, w = A K 2*C*dk,
      u = A V 2*C*dv, v_new = u - w S 2*dk*dv, S += K^T v_new 2*dk*dv, o = Q S 2*dk*dv and the
      intra-chunk (Q K^T) v_new 2*C*(dk + dv): 6*dk*dv + 2*C*(3*dk + 2*dv). The triangular
      solve (I + A)^-1, ~C^2/3 per token, is under 1 % and left out.
      Mamba2 SSD (Dao & Gu, arXiv:2405.21060 s6; mamba_ssm
      ssd_combined._mamba_chunk_scan_combined_fwd): chunk states B^T x 2*dk*dv, readout
      C S 2*dk*dv, intra-chunk (C B^T . L) x 2*C*dv per head (counted whole: the kernel
      computes the diagonal tiles in full) and C B^T 2*C*dk once per B/C group
      (num_key_heads groups; _bmm_chunk_fwd forms CB per group).
    Plus the depthwise causal conv1d over the q/k/v (x/B/C) channels: 2 * width FLOPs each.
    """
    la = model.linear_attn
    assert la is not None
    hv, hk, dk, dv = la.num_value_heads, la.num_key_heads, la.key_head_dim, la.value_head_dim
    if model.model_type == "nemotron_h":  # Mamba2 mixers (catalog hf_hybrid._mamba2)
        core = hv * (4.0 * dk * dv + 2.0 * _SSD_CHUNK * dv) + hk * 2.0 * _SSD_CHUNK * dk
    else:
        core = hv * (6.0 * dk * dv + 2.0 * _FLA_CHUNK * (3 * dk + 2 * dv))
    conv = 2.0 * la.conv_kernel * (2 * hk * dk + hv * dv)
    return core + conv


def linear_attn_time(
    model: ModelSpec, shape: BatchShape, lay: Layout, eff: Efficiency, hw: Hardware
) -> float:
    """Linear attention / SSM mixer of one layer: prompt tokens run the chunked kernels
    (`linear_prefill_flops`); decode tokens the recurrence, ~4*Hv*dk*dv FLOPs (state update +
    readout). Every sequence of the step reads and writes its state (Hv*dk*dv elements in the
    state dtype, LinearAttnSpec.state_bytes: fp32, or bf16 where a Mamba config says) once."""
    la = model.linear_attn
    if la is None:
        return 0.0
    hv = la.num_value_heads / lay.tp
    decode = 4.0 * hv * la.key_head_dim * la.value_head_dim * shape.decode_seqs
    prefill = linear_prefill_flops(model) / lay.tp * shape.prefill_tokens
    flops = (decode + prefill) / lay.dp
    state = hv * la.key_head_dim * la.value_head_dim * la.state_bytes  # B per sequence
    nbytes = 2.0 * state * (shape.decode_seqs + shape.prefill_seqs) / lay.dp
    return max(flops / (hw.attn_flops * eff.attn_eta), nbytes / (hw.hbm * eff.mem_eta))
