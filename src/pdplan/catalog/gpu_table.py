"""Built-in GPU table: datasheet numbers per accelerator, their sources and name aliases."""

from __future__ import annotations

from pdplan.catalog.gpu_spec import GPUSpec

__all__ = ["BUILTIN"]

# Numbers: reference/gpus.csv (dense, no sparsity), one row per GPU. Columns and units:
#   vendor, bf16 TFLOP/s, fp8 TFLOP/s, fp4 TFLOP/s, int8 TOP/s, memory GiB, HBM TB/s (1e12 B/s),
#   scale-up GB/s unidirectional per GPU, scale-up domain (GPUs), GPUs per node,
#   NIC Gb/s per GPU, host PCIe GB/s unidirectional, TDP W, measured max achievable BF16 matmul
#   TFLOP/s (MAMF, Bekman's ML Engineering table; A800 / H800 take the A100 / H100 figure: same
#   die and clocks; None where none was measured).
# Memory is the usable capacity where the csv notes give one (nvidia-smi MiB / 1024):
#   GB200 189471 MiB = 185.03 GiB, B300 275040 MiB = 268.59 GiB, GB300 284208 MiB = 277.55 GiB,
#   L40S 46068 MiB = 44.99 GiB; otherwise the csv's capacity column read as GiB (H100 80, H200 141).
#   Parts the csv lacks (A10G, A40, T4, V100, ...) take their datasheet or press numbers from
#   _SOURCES, and memory as nvidia-smi reports it where a published nvidia-smi table shows it.
# PCIe cards (H100-PCIe, L40S, L4): the csv lists scale-up domain 1 (no NVLink); we set the domain
# to the 8 GPUs of the node so TP inside a node runs at the PCIe scale-up figure (AIC's intra-node
# model: intra_node_bw = PCIe), instead of being barred.
_Row = tuple[str, float, float | None, float | None, float | None, float, float, float, int, int]
_ROWS: dict[str, tuple[_Row, float, float, float | None, float | None]] = {
    # key: ((vendor, bf16, fp8, fp4, int8, GiB, TB/s, scaleup GB/s, domain, per node), nic, pcie, W,
    #       MAMF)
    "a100-sxm": (("NVIDIA", 312, None, None, 624, 80, 2.039, 300, 8, 8), 200, 32, 400, 271.2),
    "h100-sxm": (("NVIDIA", 989, 1979, None, 1979, 80, 3.35, 450, 8, 8), 400, 64, 700, 794.5),
    # A100 80GB PCIe: the SXM die and clocks at 300 W; an NVLink bridge pairs two cards (the
    # scale-up domain), wider TP crosses PCIe Gen4 (scale-out); MAMF taken from the SXM part
    "a100-pcie": (("NVIDIA", 312, None, None, 624, 80, 1.935, 300, 2, 8), 200, 32, 300, 271.2),
    "a100-40gb": (("NVIDIA", 312, None, None, 624, 40, 1.555, 300, 8, 8), 200, 32, 400, 271.2),
    # Ampere / Ada PCIe cards without NVLink: TP inside a node runs over PCIe (see above)
    "a10": (("NVIDIA", 125, None, None, 250, 24, 0.6, 32, 8, 8), 100, 32, 150, None),
    "l40": (("NVIDIA", 181, 362, None, 362, 48, 0.864, 32, 8, 8), 200, 32, 300, None),
    "h100-pcie": (("NVIDIA", 756.5, 1513, None, 1513, 80, 2.0, 64, 8, 8), 400, 64, 350, None),
    "h200-sxm": (("NVIDIA", 989, 1979, None, 1979, 141, 4.8, 450, 8, 8), 400, 64, 700, 794.5),
    "h20": (("NVIDIA", 148, 296, None, 296, 96, 4.0, 450, 8, 8), 400, 64, 400, None),
    # the H20 die with 141 GB of HBM3e (AIC h20_3e.yaml: 4917 GB/s, 141 GiB, 200 Gb/s NIC per GPU)
    "h20-3e": (("NVIDIA", 148, 296, None, 296, 141, 4.917, 450, 8, 8), 200, 64, 500, None),
    "h20e": (("NVIDIA", 146.5, 293, None, 293, 141, 4.8, 450, 8, 8), 200, 64, 500, None),
    # export variants: the A100 / H100 die with NVLink cut to 400 GB/s bidirectional (200 each way)
    "a800-sxm": (("NVIDIA", 312, None, None, 624, 80, 2.039, 200, 8, 8), 200, 32, 400, 271.2),
    "h800-sxm": (("NVIDIA", 989, 1979, None, 1979, 80, 3.35, 200, 8, 8), 400, 64, 700, 794.5),
    "b200-sxm": (("NVIDIA", 2250, 4500, 9000, 4500, 180, 7.7, 900, 8, 8), 800, 64, 1000, 1745),
    "gb200": (("NVIDIA", 2500, 5000, 10000, 5000, 185.03, 8.0, 900, 72, 4), 800, 64, 1200, 1822),
    "b300-sxm": (("NVIDIA", 2250, 4500, 14000, None, 268.59, 7.75, 900, 8, 8), 800, 64, 1100, 1769),
    "gb300": (("NVIDIA", 2500, 5000, 15000, None, 277.55, 8.0, 900, 72, 4), 800, 64, 1400, None),
    "l40s": (("NVIDIA", 362, 733, None, 733, 44.99, 0.864, 32, 8, 8), 400, 32, 350, None),
    "l4": (("NVIDIA", 121, 242, None, 242, 24, 0.3, 32, 8, 8), 200, 32, 72, None),
    # RTX PRO 6000 Blackwell Server Edition: GDDR7 (512-bit x 28 Gb/s = 1792 GB/s), no NVLink:
    # GPUs of a node talk over PCIe Gen5 x16 (64 GB/s each way), like the PCIe cards above
    # GeForce RTX 5090: the same GB202 SM at 170 SMs, 32 GB GDDR7, PCIe only
    "rtx-5090": (("NVIDIA", 419, 838, 1676, 838, 31.84, 1.792, 64, 8, 8), 400, 64, 575, None),
    # GeForce RTX 4090 (Ada AD102, 128 SMs): GeForce tensor cores run FP32 accumulation at half
    # rate, so BF16 165.2 and FP8 330.3 dense (the 330.3 / 660.6 figures are FP16-accumulate);
    # 24 GB GDDR6X (nvidia-smi 24564 MiB = 23.99 GiB), 1,008 GB/s, PCIe Gen4 x16, no NVLink
    "rtx-4090": (("NVIDIA", 165.2, 330.3, None, 660.6, 23.99, 1.008, 32, 8, 8), 200, 32, 450, None),
    # DGX Spark (GB10): one GPU per box on 128 GB LPDDR5X shared with the CPU; SM 12.1 runs
    # FP8 at the FP16 rate (AIC gb10.yaml, mmapeak); boxes link over one ConnectX-7 (200 Gb/s)
    "gb10": (("NVIDIA", 213, 214, 427, 214, 119.7, 0.273, 25, 1, 1), 200, 32, 140, None),
    # Intel Arc Pro B60: XMX BF16 / INT8, no FP8; PCIe 5.0 x8 between cards
    "arc-pro-b60": (("Intel", 98.3, None, None, 197, 24, 0.456, 32, 8, 8), 200, 32, 200, None),
    "rtx-pro-6000": (
        ("NVIDIA", 467.8, 935.6, 1871.2, 935.6, 95.59, 1.792, 64, 8, 8),
        400,
        64,
        600,
        None,
    ),
    # PCIe cards with NVLink bridges: the bridge is the scale-up domain (H100 NVL pairs,
    # H200 NVL 2- or 4-way); wider TP inside the server crosses PCIe, modelled as scale-out
    "h100-nvl": (("NVIDIA", 835.5, 1670.5, None, 1670.5, 94, 3.9, 300, 2, 8), 400, 64, 400, None),
    "h200-nvl": (("NVIDIA", 835.5, 1670.5, None, 1670.5, 141, 4.8, 450, 4, 8), 400, 64, 600, None),
    # Grace Hopper: one H100 die per superchip node, NVLink-C2C to the CPU, ConnectX-7 out
    "gh200": (("NVIDIA", 989, 1979, None, 1979, 96, 4.0, 450, 1, 1), 400, 450, 1000, 794.5),
    "gh200-144gb": (("NVIDIA", 989, 1979, None, 1979, 144, 4.9, 450, 1, 1), 400, 450, 1000, 794.5),
    "mi300x": (("AMD", 1307.4, 2614.9, None, 2614.9, 192, 5.3, 448, 8, 8), 400, 64, 750, 668.4),
    "mi325x": (("AMD", 1307.4, 2614.9, None, 2614.9, 256, 6.0, 448, 8, 8), 400, 64, 1000, 784.9),
    "mi355x": (("AMD", 2516.6, 5033.2, 10066.4, 5033.2, 288, 8.0, 448, 8, 8), 400, 64, 1400, 1565),
    # MI350X: the MI355X's CDNA4 die at a 2200 MHz peak clock instead of 2400 (air-cooled)
    "mi350x": (("AMD", 2306.9, 4613.7, 9227.5, 4613.7, 288, 8.0, 448, 8, 8), 400, 64, 1000, 1434.6),
    "gaudi3": (("Intel", 1835, 1835, None, None, 128, 3.7, 600, 8, 8), 600, 64, None, 1243),
    # Volta (V100) and Turing (T4): FP16 tensor cores only, no BF16 / FP8 / FP4 (Volta: no INT8
    # tensor path either); the BF16 column holds the FP16 tensor rate, which engines run BF16
    # checkpoints at (vLLM casts them to FP16 below SM 8.0: the same 2 bytes a weight).
    # SXM2: six NVLink2 links, 300 GB/s bidirectional = 150 each way, eight to a DGX-1 / p3.16xlarge
    "v100-sxm2": (("NVIDIA", 125, None, None, None, 32, 0.9, 150, 8, 8), 50, 16, 300, None),
    "v100-sxm2-16gb": (("NVIDIA", 125, None, None, None, 15.78, 0.9, 150, 8, 8), 50, 16, 300, None),
    # V100 / T4 PCIe cards: no NVLink, TP inside a node over PCIe Gen3 x16 (16 GB/s each way)
    "v100-pcie": (("NVIDIA", 112, None, None, None, 32, 0.9, 16, 8, 8), 50, 16, 250, None),
    "v100-pcie-16gb": (("NVIDIA", 112, None, None, None, 15.78, 0.9, 16, 8, 8), 50, 16, 250, None),
    "t4": (("NVIDIA", 65, None, None, 130, 15.0, 0.32, 16, 8, 8), 12.5, 16, 70, None),
    # A10G (AWS G5): the A10's GA102 memory (24 GB GDDR6, 600 GB/s) with a lower tensor rate
    "a10g": (("NVIDIA", 70, None, None, 140, 22.49, 0.6, 32, 8, 8), 12.5, 32, 300, None),
    # GA102 cards with a two-card NVLink bridge (112.5 GB/s bidirectional = 56.25 each way): the
    # bridged pair is the scale-up domain, wider TP inside the server crosses PCIe Gen4 (as the
    # A100 PCIe)
    "a40": (("NVIDIA", 149.7, None, None, 299.3, 44.99, 0.696, 56.25, 2, 8), 100, 32, 300, None),
    "rtx-a6000": (
        ("NVIDIA", 154.8, None, None, 309.7, 47.99, 0.768, 56.25, 2, 8),
        100,
        32,
        300,
        None,
    ),
    # Ada pro / China parts on PCIe Gen4 x16, no NVLink: TP over PCIe (see above)
    "rtx-6000-ada": (
        ("NVIDIA", 364.2, 728.5, None, 728.5, 47.99, 0.96, 32, 8, 8),
        200,
        32,
        300,
        None,
    ),
    "l20": (("NVIDIA", 119.5, 239, None, 239, 44.99, 0.864, 32, 8, 8), 200, 32, 275, None),
    # CDNA2 (no FP8): ROCm shows each MI250X GCD as its own GPU, so a "GPU" here is one GCD (half
    # the OAM: 191.5 TFLOP/s, 64 GB, 1.6384 TB/s, 280 W), eight GCDs on a node of four OAMs
    "mi250x": (("AMD", 191.5, None, None, 191.5, 64, 1.6384, 100, 8, 8), 100, 32, 280, None),
    # MI210: one CDNA2 GCD on a PCIe card; a 4-card Infinity Fabric bridge (3 links a card, 50 GB/s
    # each way a link) joins a hive of four, wider TP in the server crosses PCIe Gen4
    "mi210": (("AMD", 181, None, None, 181, 64, 1.6384, 150, 4, 8), 100, 32, 300, None),
}

# The csv's `sources` column, plus what we assumed where it is blank.
_SOURCES: dict[str, str] = {
    "a100-sxm": "AIC a100_sxm.yaml; MLE-ACC; MLE-NET; llm-analysis gpu_configs/a100-sxm-80gb.json",
    "h100-sxm": "AIC h100_sxm.yaml; MLE-ACC; MLE-NET; llm-analysis h100-sxm-80gb.json",
    "h100-pcie": "AIC h100_pcie.yaml; MLE-ACC",
    "a100-pcie": "NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe: 1,935 GB/s HBM2e, 300 W, "
    "BF16 312 TFLOP/s dense, NVLink bridge for 2 GPUs 600 GB/s bidirectional, PCIe Gen4 64 GB/s "
    "bidirectional); MAMF as A100 SXM (same GA100 die and 1410 MHz boost); ASSUMED nic 200 Gb/s "
    "as A100 SXM",
    "a100-40gb": "NVIDIA A100 Tensor Core GPU datasheet (40GB SXM: 1,555 GB/s HBM2, 400 W, "
    "NVLink 600 GB/s bidirectional); compute and MAMF as A100 80GB SXM (same die and clocks)",
    "a10": "NVIDIA A10 Tensor Core GPU datasheet (BF16 125 TFLOP/s dense, INT8 250 TOPS dense, "
    "24 GB GDDR6 600 GB/s, 150 W, PCIe Gen4 x16); ASSUMED nic 100 Gb/s",
    "l40": "NVIDIA L40 datasheet (BF16 181 / FP8 362 TFLOP/s dense, 48 GB GDDR6 864 GB/s, "
    "300 W, PCIe Gen4 x16, no NVLink); ASSUMED nic 200 Gb/s",
    "h200-sxm": "AIC h200_sxm.yaml; MLE-ACC; MLE-NET",
    "h20": "PRESS (tweaktown 2024 H20 article); citsjtu2020/LLM-Prof hardware_spec.md; "
    "ASSUMED nic 400 Gb/s (csv blank)",
    "a800-sxm": "NVIDIA A800 40GB/80GB datasheet (NVLink 400 GB/s bidirectional); compute and "
    "HBM as A100-80GB SXM (same GA100 die); ASSUMED nic 200 Gb/s as A100",
    "h800-sxm": "NVIDIA H800 SXM5 datasheet (NVLink 400 GB/s bidirectional); compute and HBM "
    "as H100 SXM (same GH100 die); ASSUMED nic 400 Gb/s as H100 (Mooncake FAST'25: 8xH800 RDMA)",
    "b200-sxm": "AIC b200_sxm.yaml; MLE-ACC; MLE-NET",
    "gb200": "AIC gb200.yaml; MLE-ACC",
    "b300-sxm": "AIC b300_sxm.yaml; MLE-ACC",
    "gb300": "AIC gb300.yaml; MLE-ACC",
    "l40s": "AIC l40s.yaml; MLE-ACC",
    "h20-3e": "AIC h20_3e.yaml (HBM3e 4917 GB/s, 141 GiB, 500 W, inter-node 25 GB/s per GPU); "
    "compute as H20 (same die)",
    "h20e": "AIC h20e_sxm.yaml (HBM3e 4.8 TB/s, 141 GiB, 146.5 / 293 TFLOP/s, 500 W, inter-node "
    "25 GB/s per GPU)",
    "rtx-5090": "AIC rtx_5090.yaml (nvidia-smi 32607 MiB; 170 SMs at the 2407 MHz boost: 419 "
    "TFLOP/s dense BF16, NVIDIA published spec; GDDR7 1.792 TB/s); NVIDIA reference TDP 575 W; "
    "ASSUMED 8 cards a node over PCIe Gen5 x16 and nic 400 Gb/s as the RTX PRO 6000",
    "rtx-4090": "NVIDIA Ada Lovelace architecture whitepaper v1.0, appendix table for GeForce "
    "RTX 4090 (peak BF16 / FP16 tensor 165.2 TFLOP/s and FP8 330.3 with FP32 accumulate, INT8 "
    "660.6 TOP/s, dense; 21 Gb/s x 384-bit GDDR6X = 1,008 GB/s; 450 W); ASSUMED 8 cards a node "
    "over PCIe Gen4 x16 (32 GB/s each way) and a 200 Gb/s NIC per GPU",
    "gb10": "AIC gb10.yaml (NVIDIA DGX Spark product page and hardware docs: 273 GB/s "
    "LPDDR5X, 119.7 GiB usable to CUDA, 140 W; FP16 / FP8 / FP4 dense TFLOP/s empirical, "
    "mmapeak, NVIDIA forum thread 351993; ConnectX-7 25 GB/s)",
    "arc-pro-b60": "AIC b60.yaml (456 GB/s, 24 GiB, 98.3 TFLOP/s BF16, 197 TOP/s INT8, 200 W "
    "board power, PCIe 5.0 x8 = 32 GB/s)",
    "rtx-pro-6000": "AIC rtx_pro_6000_server.yaml (nvidia-smi on a server node: 97887 MiB = "
    "95.59 GiB, 2430 MHz max SM clock, 600 W; dense Tensor Core TFLOP/s scaled to that clock; "
    "GDDR7 1.792 TB/s; PCIe Gen5 x16 between GPUs; ASSUMED nic 400 Gb/s, AIC's placeholder)",
    "l4": "AIC l4.yaml",
    "mi300x": "MLE-ACC; MLE-NET; GenZ Systems/system_configs.py; "
    "MicrosoftDocs nd-mi300x-v5-series.md",
    "mi325x": "MLE-ACC; MLE-NET; PRESS (TDP)",
    "mi355x": "MLE-ACC (formula 2400MHz*512*2*1024); PRESS (tomshardware/theregister 1400 W); "
    "ASSUMED scale-up 448 GB/s (same as MI300X: 7 XGMI links x 64 GB/s; csv blank, "
    "not confirmed from a primary source) and nic 400 Gb/s (csv blank)",
    "gaudi3": "MLE-ACC; MLE-NET; GenZ system_configs.py",
    "h100-nvl": "NVIDIA H100 NVL product brief (94 GB HBM3, 3.9 TB/s, BF16 1,671 / FP8 3,341 "
    "TFLOP/s with sparsity, halved for dense; NVLink bridge 600 GB/s bidirectional between a "
    "pair; 350-400 W); ASSUMED nic 400 Gb/s",
    "h200-nvl": "NVIDIA H200 NVL datasheet (141 GB HBM3e, 4.8 TB/s, BF16 1,671 / FP8 3,341 "
    "TFLOP/s with sparsity, halved for dense; 2- or 4-way NVLink bridge 900 GB/s "
    "bidirectional; up to 600 W); ASSUMED nic 400 Gb/s",
    "gh200": "NVIDIA GH200 Grace Hopper Superchip datasheet (H100 die: dense BF16 989 / FP8 "
    "1,979 TFLOP/s, 96 GB HBM3 4 TB/s; NVLink-C2C 900 GB/s to Grace; module up to 1000 W); one "
    "GPU per node, ConnectX-7 400 Gb/s; MAMF taken from H100 SXM (same die and boost clock)",
    "gh200-144gb": "NVIDIA GH200 datasheet, HBM3e variant (144 GB, 4.9 TB/s); otherwise as gh200",
    "mi350x": "AMD Instinct MI350X data sheet (288 GB HBM3E, 8 TB/s, 1000 W, 2200 MHz peak "
    "engine clock); dense rates scaled from the MI355X's (2400 MHz) by 2200 / 2400, same CDNA4 "
    "die; ASSUMED scale-up and nic as MI355X, and MAMF as MI355X's 1565 x 2200 / 2400",
    "v100-sxm2": "NVIDIA Tesla V100 datasheet (SXM2: 125 TFLOP/s FP16 tensor, dense, no BF16 / "
    "FP8 / INT8 tensor cores: engines run BF16 checkpoints in FP16 there, same bytes per weight; "
    "32 GB HBM2 900 GB/s; NVLink 300 GB/s bidirectional; 300 W; PCIe Gen3 x16); memory as "
    "nvidia-smi shows Tesla V100-SXM2-32GB (32768 MiB); ASSUMED 8 to a node (DGX-1 / p3 "
    "hybrid cube-mesh, not all-to-all) and nic 50 Gb/s (DGX-1: 4 x 100 Gb/s EDR for 8 GPUs)",
    "v100-sxm2-16gb": "NVIDIA Tesla V100 datasheet (SXM2 16 GB); memory as nvidia-smi shows "
    "Tesla V100-SXM2-16GB (16160 MiB = 15.78 GiB); otherwise as v100-sxm2 (ASSUMED node and nic)",
    "v100-pcie": "NVIDIA Tesla V100 datasheet (PCIe: 112 TFLOP/s FP16 tensor, dense, no BF16 / "
    "FP8 / INT8 tensor cores: engines run FP16 there, same bytes per weight; 32 GB HBM2 900 "
    "GB/s; 250 W; PCIe Gen3 x16 = 16 GB/s each way, no NVLink); memory as nvidia-smi shows "
    "Tesla V100-PCIE-32GB (32768 MiB); ASSUMED 8 cards a node and nic 50 Gb/s as v100-sxm2",
    "v100-pcie-16gb": "NVIDIA Tesla V100 datasheet (PCIe 16 GB); memory as nvidia-smi shows "
    "Tesla V100-PCIE-16GB (16160 MiB = 15.78 GiB); otherwise as v100-pcie (ASSUMED node and nic)",
    "t4": "NVIDIA T4 Tensor Core GPU datasheet (Turing: 65 TFLOP/s FP16 mixed-precision "
    "tensor, 130 TOP/s INT8, dense; no BF16 / FP8: engines run FP16 there, same bytes per weight; "
    "16 GB GDDR6 320 GB/s; 70 W; PCIe Gen3 x16 = 16 GB/s each way, no NVLink); memory as "
    "nvidia-smi shows Tesla T4 (15360 MiB = 15.0 GiB); ASSUMED 8 cards a node and nic 12.5 Gb/s "
    "(AWS g4dn.metal: 8 x T4, 100 Gb/s)",
    "a10g": "baseten 'NVIDIA A10 vs A10G for ML model inference' (A10G: AWS G5 variant of the "
    "A10, same 24 GB GDDR6 600 GB/s, lower tensor compute, higher CUDA-core rate); ASSUMED BF16 "
    "70 TFLOP/s dense = 80 SMs x 1710 MHz x 512 dense FP16/BF16 FLOP/clk/SM (GA102 at the GeForce "
    "rate for FP32 accumulate, half the A10's 1024), not from a datasheet; a measured 69.47 "
    "TFLOP/s BF16 10240^3 matmul on 'NVIDIA A10G' (zzc0721/torch-performance-test-data issue "
    "#126) sits at 99 % of 70 and 56 % of the A10's 125; ASSUMED INT8 140 TOP/s (2x BF16, the "
    "A10's ratio); memory and 300 W power cap as nvidia-smi shows NVIDIA A10G (23028 MiB = 22.49 "
    "GiB); PCIe Gen4 x16, no NVLink; ASSUMED nic 12.5 Gb/s (g5.48xlarge: 8 x A10G, 100 Gb/s)",
    "a40": "NVIDIA A40 datasheet (BF16 149.7 / INT8 299.3 dense, 299.4 / 598.6 with sparsity; "
    "48 GB GDDR6 with ECC 696 GB/s; NVLink bridge for 2 cards 112.5 GB/s bidirectional; PCIe "
    "Gen4 64 GB/s bidirectional; 300 W); memory as nvidia-smi shows NVIDIA A40 with ECC on "
    "(46068 MiB = 44.99 GiB); ASSUMED nic 100 Gb/s as A10",
    "rtx-a6000": "NVIDIA RTX A6000 datasheet (Tensor 309.7 TFLOP/s with sparsity: 154.8 BF16 "
    "dense = 84 SMs x 1800 MHz x 1024; INT8 309.7 TOP/s dense, Microway Ampere comparison; 48 GB "
    "GDDR6 768 GB/s; NVLink 2-way bridge 112.5 GB/s bidirectional; PCIe Gen4 x16; 300 W); "
    "memory as nvidia-smi shows NVIDIA RTX A6000 (49140 MiB = 47.99 GiB, ECC off); ASSUMED nic "
    "100 Gb/s as A40",
    "rtx-6000-ada": "NVIDIA RTX 6000 Ada Generation datasheet (Tensor 1,457 TFLOP/s FP8 with "
    "sparsity, halved: 728.5 dense; 91.1 TFLOP/s FP32; 48 GB GDDR6 960 GB/s; 300 W; PCIe Gen4 "
    "x16, no NVLink) and the Ada Lovelace whitepaper appendix (BF16 / FP16 tensor with FP32 "
    "accumulate 364.2 dense, INT8 728.5 dense: full-rate pro card); memory as nvidia-smi shows "
    "NVIDIA RTX 6000 Ada Generation (49140 MiB = 47.99 GiB); ASSUMED 8 cards a node and nic "
    "200 Gb/s as L40",
    "l20": "PRESS, medium confidence (late-2023 reports of NVIDIA's China parts: L20 FP16 / BF16 "
    "119.5 and FP8 / INT8 239 TFLOP/s, read as dense; taoguba.com.cn: 'L20 is 32 % of the L40S'; "
    "consistent with 92 SMs x 2520 MHz x 512, SM count and clock from topcpu.net / "
    "technical.city; 48 GB GDDR6 864 GB/s; 275 W; PCIe Gen4 x16, no NVLink; sold with 200 Gb/s "
    "networking like the L40S); memory as nvidia-smi shows NVIDIA L20 with ECC on (46068 MiB = "
    "44.99 GiB; nvidia-smi reports a 350 W power cap on the nodes seen)",
    "mi250x": "AMD Instinct MI200 launch table (OAM: 383 TFLOP/s BF16 / FP16 and 383 TOP/s INT8 "
    "dense, no sparsity or FP8 on CDNA2; 128 GB HBM2e, 8192 bit x 3.2 Gb/s = 3.2768 TB/s; 560 W) "
    "split over its two GCDs, each of which ROCm shows as one GPU: 191.5, 64 GB, 1.6384 TB/s, 280 "
    "W; ROCm MI250 microarchitecture doc (each GCD its own PCIe Gen4 x16 to the host; Infinity "
    "Fabric links 50 GB/s each way, 4 between the two GCDs of an OAM = 200, 1 or 2 to GCDs of "
    "other OAMs); ASSUMED scale-up 100 GB/s each way (an 8-GCD ring crosses the 1-2 link "
    "inter-OAM hops; the sibling GCD alone has 200), 8 GCDs (4 OAMs) a node, nic 100 Gb/s per GCD "
    "(Frontier: 4 x 200 Gb/s Slingshot for 8 GCDs)",
    "mi210": "AnandTech 'AMD Releases Instinct MI210' table (181 TFLOP/s FP16 / BF16 and 181 "
    "TOP/s INT8 dense, no FP8 on CDNA2; 64 GB HBM2e, 4096 bit x 3.2 Gb/s = 1.6384 TB/s; 300 W; "
    "PCIe Gen4 x16; 3 Infinity Fabric links, 100 GB/s bidirectional each); ASSUMED the optional "
    "4-card Infinity Fabric bridge is fitted (a hive of 4, 3 x 50 = 150 GB/s each way per card; "
    "without it TP runs over PCIe: override with a GPU file), 8 cards a node and nic 100 Gb/s",
}

_ALIASES: dict[str, tuple[str, ...]] = {
    "a100-sxm": ("a100", "a100-80gb", "a100-sxm4", "a100-80gb-sxm", "a100-sxm-80gb"),
    "h100-sxm": ("h100", "h100-80gb", "h100-sxm5", "h100-sxm-80gb", "h100-80gb-hbm3"),
    "h100-pcie": ("h100-pcie-80gb",),
    "a100-pcie": ("a100-pcie-80gb", "a100-80gb-pcie", "a100-pcie4"),
    "a100-40gb": ("a100-sxm4-40gb", "a100-40gb-sxm"),
    "a10": ("a10-24gb",),
    "l40": ("l40-48gb",),
    "h200-sxm": ("h200", "h200-141gb", "h200-sxm-141gb"),
    "h20": ("h20-96gb", "h20-sxm", "h20-sxm5"),
    "h20-3e": ("h20-141gb", "h20-hbm3e"),
    "a800-sxm": ("a800", "a800-80gb", "a800-sxm4"),
    "h800-sxm": ("h800", "h800-80gb", "h800-sxm5"),
    "b200-sxm": ("b200", "b200-180gb", "dgx-b200", "hgx-b200"),
    "gb200": ("gb200-nvl72", "gb200-nvl"),
    "b300-sxm": ("b300", "hgx-b300", "b300-288gb"),
    "gb300": ("gb300-nvl72", "gb300-nvl"),
    "l40s": ("l40s-48gb",),
    "l4": ("l4-24gb",),
    "h20e": ("h20e-sxm",),
    "rtx-5090": ("geforce-rtx-5090", "rtx5090"),
    "rtx-4090": ("geforce-rtx-4090", "rtx4090", "rtx-4090-24gb"),
    "gb10": ("dgx-spark", "gb10-spark"),
    "arc-pro-b60": ("b60", "intel-arc-pro-b60"),
    "rtx-pro-6000": (
        "rtx-pro-6000-server",
        "rtxpro6000-blackwell-server",
        "rtx-pro-6000-blackwell",
        "rtx-pro-6000-blackwell-server",
        "rtx-pro-6000-blackwell-server-edition",  # nvidia-smi's name
        "rtxpro6000",
        "rtx6000pro",
    ),
    "mi300x": ("mi300", "instinct-mi300x"),
    "mi325x": ("instinct-mi325x",),
    "mi355x": ("instinct-mi355x",),
    "mi350x": ("instinct-mi350x",),
    "h100-nvl": ("h100-nvl-94gb",),
    "h200-nvl": ("h200-nvl-141gb",),
    "gh200": ("gh200-96gb", "grace-hopper"),
    "gh200-144gb": ("gh200-hbm3e",),
    "gaudi3": ("gaudi-3", "hl-325l"),
    # nvidia-smi / rocm-smi / cloud spellings (the "NVIDIA " / "AMD Instinct " prefix and a
    # trailing memory size are peeled off by gpus._spellings; "Tesla " is not)
    "v100-sxm2": ("v100", "v100-sxm", "v100-32gb", "tesla-v100-sxm2-32gb"),
    "v100-sxm2-16gb": ("v100-16gb", "v100-sxm-16gb", "tesla-v100-sxm2-16gb"),
    "v100-pcie": ("v100-pcie-32gb", "tesla-v100-pcie-32gb"),
    "v100-pcie-16gb": ("tesla-v100-pcie-16gb",),
    "t4": ("tesla-t4", "t4-16gb"),
    "a10g": ("a10g-24gb",),
    "a40": ("a40-48gb",),
    "rtx-a6000": ("a6000", "rtxa6000", "rtx-a6000-48gb"),
    "rtx-6000-ada": (
        "rtx-6000-ada-generation",  # nvidia-smi's name
        "rtx6000-ada",
        "rtx6000ada",
        "rtx-a6000-ada",
        "rtx-6000-ada-48gb",
    ),
    "l20": ("l20-48gb",),
    # ROCm's marketing names for the MI250X / MI250 device id (HIP agent name, libdrm amdgpu.ids)
    "mi250x": ("instinct-mi250x", "mi250x/mi250", "mi250x-/-mi250", "mi250x-gcd"),
    "mi210": ("instinct-mi210", "mi210-64gb"),
}


# Volta / Turing parts: no BF16, FP8 or FP4 tensor cores (GPUSpec.fp16_only)
_FP16_ONLY = frozenset({"v100-sxm2", "v100-sxm2-16gb", "v100-pcie", "v100-pcie-16gb", "t4"})


def _build(key: str) -> GPUSpec:
    (vendor, bf16, fp8, fp4, int8, gib, tbps, su, dom, per), nic, pcie, tdp, mamf = _ROWS[key]
    return GPUSpec(
        name=key,
        vendor=vendor,
        bf16_tflops=float(bf16),
        fp8_tflops=None if fp8 is None else float(fp8),
        fp4_tflops=None if fp4 is None else float(fp4),
        int8_tops=None if int8 is None else float(int8),
        hbm_gib=float(gib),
        hbm_tbps=float(tbps),
        scaleup_gbps=float(su),
        scaleup_domain=int(dom),
        gpus_per_node=int(per),
        nic_gbps=float(nic),
        pcie_gbps=float(pcie),
        tdp_w=None if tdp is None else float(tdp),
        mamf_bf16_tflops=None if mamf is None else float(mamf),
        fp16_only=key in _FP16_ONLY,
        aliases=_ALIASES.get(key, ()),
        source=_SOURCES[key],
    )


BUILTIN: dict[str, GPUSpec] = {k: _build(k) for k in _ROWS}
