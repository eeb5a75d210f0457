"""Peak rates and element sizes one instance's kernels run at (built by CostModel)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACT", "Hardware"]

ACT = 2.0  # BF16 activation bytes


@dataclass(frozen=True)
class Hardware:
    """Peaks in SI units: FLOP/s and bytes/s; element sizes in bytes."""

    gemm_flops: float
    moe_flops: float
    attn_flops: float
    hbm: float
    wb: float  # weight bytes / element (attention, dense FFN)
    mb: float  # MoE expert weight bytes / element
    kvb: float  # KV cache bytes / element
    fp8_flops: float = 0.0  # FP8 tensor peak (DSA indexer logits); 0 = use attn_flops
    tile: float = 1.0  # factor on Efficiency.gemm_m_half for this GPU (efficiency.tile_scale)
