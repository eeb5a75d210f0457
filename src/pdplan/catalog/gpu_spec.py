"""GPUSpec and ClusterSpec: an accelerator's peak numbers and how GPUs are wired together."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClusterSpec", "GPUSpec"]


@dataclass(frozen=True)
class GPUSpec:
    """Peak (dense, no sparsity) numbers of one accelerator, each field with its unit.

    A `None` FLOP/s field means the GPU has no tensor-core path for that dtype; the cost
    model then runs that dtype at the next wider one (FP4 -> FP8 -> BF16), as engines do.
    """

    name: str  # canonical key, e.g. "h100-sxm"
    vendor: str
    bf16_tflops: float  # dense BF16 tensor TFLOP/s
    fp8_tflops: float | None  # dense FP8 TFLOP/s
    fp4_tflops: float | None  # dense FP4 TFLOP/s
    int8_tops: float | None  # dense INT8 TOP/s
    hbm_gib: float  # usable device memory, GiB (2^30 B)
    hbm_tbps: float  # HBM bandwidth, TB/s (10^12 B/s)
    scaleup_gbps: float  # scale-up (NVLink / XGMI) bandwidth per GPU, unidirectional GB/s
    scaleup_domain: int  # GPUs reachable over the scale-up fabric (8 HGX, 72 NVL72)
    gpus_per_node: int  # GPUs per server / tray
    nic_gbps: float  # scale-out NIC per GPU, Gb/s (10^9 bit/s)
    pcie_gbps: float = 64.0  # host PCIe per GPU, unidirectional GB/s (Gen5 x16 ~64 GB/s)
    tdp_w: float | None = None
    # measured maximum achievable BF16 matmul TFLOP/s (Bekman, ML Engineering "MAMF" table,
    # via reference/gpus.csv); None = not measured
    mamf_bf16_tflops: float | None = None
    # pre-Ampere (Volta SM 7.0, Turing SM 7.5): FP16 tensor cores only, so bf16_tflops holds
    # the FP16 rate and BF16 checkpoints run cast to FP16 (vLLM refuses bfloat16 below compute
    # capability 8.0); the FP8 / FP4 weight kernels engines have (FP8 and FP4 Marlin W8A16 /
    # W4A16, CUTLASS FP8) need SM 8.0+ too, so such weights are refused there
    fp16_only: bool = False
    aliases: tuple[str, ...] = ()
    source: str = ""

    def tflops(self, dtype: str) -> float:
        """Dense TFLOP/s for a GEMM in `dtype`, falling back to a wider dtype if unsupported."""
        d = dtype.lower()
        if d in ("fp4", "nvfp4", "mxfp4") and self.fp4_tflops:
            return self.fp4_tflops
        if d in ("fp4", "nvfp4", "mxfp4", "fp8", "int4") and self.fp8_tflops:
            return self.fp8_tflops
        if d == "int8" and self.int8_tops:
            return self.int8_tops
        return self.bf16_tflops

    @property
    def matmul_eta(self) -> float | None:
        """Measured achievable fraction of the BF16 peak for large matmuls (MAMF / peak)."""
        return self.mamf_bf16_tflops / self.bf16_tflops if self.mamf_bf16_tflops else None

    @property
    def hbm_bytes(self) -> float:
        return self.hbm_gib * 2**30

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_tbps * 1e12

    @property
    def scaleup_bytes_per_s(self) -> float:
        return self.scaleup_gbps * 1e9

    @property
    def nic_bytes_per_s(self) -> float:
        return self.nic_gbps * 1e9 / 8


@dataclass(frozen=True)
class ClusterSpec:
    """A homogeneous cluster: `nodes` servers of `gpu.gpus_per_node` GPUs each."""

    gpu: GPUSpec
    nodes: int = 1
    gpus_per_node: int | None = None  # override of gpu.gpus_per_node
    scaleup_domain: int | None = None  # override (e.g. NVL72 rack = 72)
    nic_gbps: float | None = None  # override of the per-GPU NIC

    @property
    def node_size(self) -> int:
        return self.gpus_per_node or self.gpu.gpus_per_node

    @property
    def domain(self) -> int:
        return self.scaleup_domain or self.gpu.scaleup_domain

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.node_size

    @property
    def nic_bytes_per_s(self) -> float:
        return (self.nic_gbps or self.gpu.nic_gbps) * 1e9 / 8
