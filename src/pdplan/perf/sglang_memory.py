"""SGLang's default --mem-fraction-static: the device less a reserve sized from its defaults."""

from __future__ import annotations

from pdplan.parallel.layout import Layout

__all__ = ["sglang_cuda_graph_max_bs", "sglang_default_chunk", "sglang_mem_fraction"]

# SGLang ServerArgs._handle_gpu_memory_settings (python/sglang/srt/server_args.py, since
# sgl-project/sglang#10975 "General heuristics for --mem-fraction-static", 2025-09-27, with
# #11076's 512 MiB constant and 1/8 parallel term; v0.5.4 on): with no
# --mem-fraction-static given, the KV pool is what is left of
#     mem_fraction_static = (gpu_mem - reserved_mem) / gpu_mem          (gpu_mem in MiB)
# after the weights (ModelRunner.profile_max_num_token: rest = free after loading - total x
# (1 - mem_fraction_static)), where reserved_mem, MiB, is
#     512                                   constant metadata (attention backends)
#   + 1.5 x max(chunked_prefill_size, 2048) prefill activations, MiB per token of the chunk
#   + 2 x cuda_graph_max_bs                 CUDA-graph buffers, MiB per captured batch size
#   + tp_size x pp_size / 8 x 1024          "adjustments for large parallel size"
#   + (DP attention) 3 x bs x dp_size, and 1.5 x bs x dp_size more when bs > 300
#   at least 10 GiB on GPUs above 60 GiB; + 2 GiB for an EAGLE / MTP draft model.
# Older releases (<= v0.5.3) took 0.79-0.88 by TP size (0.81 on an 80 GB part at TP8 against
# 0.819 here; 0.88 at TP1 against 0.836); this rule stands for the releases now served. A user
# report on a recent release reads 0.828 for Qwen3-32B on an H100 (sgl-project/sglang#29092)
# where this gives 0.819-0.836 by TP.

# GPU memory buckets -> (chunked_prefill_size, cuda_graph_max_bs below TP4, at TP4 and up):
# (below_gib, chunk tokens, bs at tp < 4, bs at tp >= 4); the same function, CUDA devices.
_BUCKETS: tuple[tuple[float, int, int, int], ...] = (
    (20.0, 2048, 8, 8),  # T4, RTX 4080
    (35.0, 2048, 24, 80),  # A10, RTX 4090 / 5090
    (60.0, 4096, 32, 160),  # A100 40GB, L40 / L40S
    (90.0, 8192, 256, 512),  # H100, A100 80GB
    (160.0, 8192, 256, 512),  # H20, H200
    (float("inf"), 16384, 512, 512),  # B200, B300, MI300X
)
_CONST_MIB = 512.0  # metadata reserve, MiB
_PER_CHUNK_TOKEN_MIB = 1.5  # MiB per token of max(chunked_prefill_size, 2048)
_PER_GRAPH_BS_MIB = 2.0  # MiB per CUDA-graph batch size
_PER_8_GPUS_MIB = 1024.0  # MiB per 8 GPUs of tp_size x pp_size
_FLOOR_MIB = 10 * 1024.0  # least reserve on GPUs above 60 GiB, MiB
_DRAFT_MIB = 2 * 1024.0  # EAGLE / MTP draft model and its graphs, MiB


def _bucket(hbm_gib: float) -> tuple[float, int, int, int]:
    return next(b for b in _BUCKETS if hbm_gib < b[0])


def sglang_default_chunk(hbm_gib: float) -> int:
    """SGLang's default --chunked-prefill-size on a GPU with `hbm_gib` GiB, tokens."""
    return _bucket(hbm_gib)[1]


def sglang_cuda_graph_max_bs(hbm_gib: float, tp_size: int) -> int:
    """SGLang's default --cuda-graph-max-bs (tp_size: the launch's --tp, all GPUs of a stage)."""
    _, _, small, large = _bucket(hbm_gib)
    return small if tp_size < 4 else large


def sglang_mem_fraction(
    hbm_gib: float, layout: Layout, chunk: int | None = None, speculative: bool = False
) -> float:
    """SGLang's default mem_fraction_static for `layout` on a GPU of `hbm_gib` GiB (the rule
    above; `chunk`: the launch's chunked-prefill size, default SGLang's for the GPU). A layout
    with attention DP is launched as --tp (all GPUs of a stage) --dp dp --enable-dp-attention."""
    gpu_mib = hbm_gib * 1024.0
    tp_size, dp = layout.stage_gpus, layout.dp
    bs = sglang_cuda_graph_max_bs(hbm_gib, tp_size)
    chunk = sglang_default_chunk(hbm_gib) if chunk is None else chunk
    reserved = _CONST_MIB + _PER_CHUNK_TOKEN_MIB * max(chunk, 2048) + _PER_GRAPH_BS_MIB * bs
    reserved += tp_size * layout.pp / 8 * _PER_8_GPUS_MIB
    if dp > 1:  # DP attention pads some operations per rank
        reserved += 3.0 * bs * dp + (1.5 * bs * dp if bs > 300 else 0.0)
    if hbm_gib > 60.0:
        reserved = max(reserved, _FLOOR_MIB)
    if speculative:
        reserved += _DRAFT_MIB
    return max(0.0, round((gpu_mib - reserved) / gpu_mib, 3))
