"""KV-cache transfer from prefill to decode (seed s5): bytes from the model's real shape, time.

Sharding choice (stated): under TP a GQA model's KV heads are split over min(TP, n_kv) ranks
and replicated beyond; only one replica of each head group sends, and a replicated decode
rank gets its copy from its peer over NVLink. An MLA latent is identical on every TP rank, so
one rank per pipeline stage sends it. PP stages each send their own layers, CP ranks their own
tokens; with attention DP a request's KV is on one DP rank (kv_shards). Each sending GPU
uses its own NIC in parallel, so time = latency + max(bytes per sender, bytes per receiver)
/ (link bandwidth * efficiency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.model_parts import KV_DTYPES, canonical_kv_dtype, kv_dtype_bytes
from pdplan.catalog.model_spec import ModelSpec, dtype_bytes
from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import canonical_engine

__all__ = [
    "ENGINE_PREALLOCATES_DECODE_KV",
    "KV_PATHS",
    "TRANSIT_DTYPES",
    "KVTransfer",
    "SeedKVExample",
    "check_transit_dtype",
    "engine_preallocates_decode_kv",
    "kv_shards",
    "kv_transfer",
    "required_gbps",
    "seed_kv_example",
    "transit_note",
]

# Per path: default line rate (Gb/s, used when no GPU is given), achieved share of line rate
# and a fixed per-transfer latency. All three are ASSUMPTIONS, flagged as such:
#  nic:    400 Gb/s ConnectX-7 per GPU (NVIDIA DGX H100 datasheet); RDMA large-message
#          ib_write_bw typically reaches ~85-90% of line rate (perftest; assumption 0.85);
#          ~20 us to post and complete the transfer (assumption).
#  nvlink: 450 GB/s = 3600 Gb/s per direction H100 NVLink4 (NVIDIA datasheet); NCCL busbw
#          ~360-370 GB/s on HGX H100 (nccl-tests), so 0.8; ~10 us (assumption).
#  pcie:   Gen5 x16 64 GB/s = 512 Gb/s per direction (PCI-SIG); ~52 GB/s measured with
#          bandwidthTest (assumption 0.8); ~10 us (assumption).
KV_PATHS: dict[str, dict[str, float]] = {
    "nic": {"gbps": 400.0, "efficiency": 0.85, "latency_s": 20e-6},
    "nvlink": {"gbps": 3600.0, "efficiency": 0.8, "latency_s": 10e-6},
    "pcie": {"gbps": 512.0, "efficiency": 0.8, "latency_s": 10e-6},
}

# Engines whose decode side reserves a request's KV before its prefill may start (the
# simulator's SimConfig.decode_prealloc): SGLang's PD disaggregation sends each request to a
# (prefill, decode) pair at once, its decode DecodePreallocQueue pre-allocates the prompt's
# KV (FIFO, while the pool has room) and only then does the prefill PrefillBootstrapQueue
# hand it to the prefill scheduler (sglang/srt/disaggregation/decode.py, prefill.py); Dynamo
# over SGLang keeps that bootstrap. vLLM's connectors (NIXL, LMCache: the decode side pulls
# once the prefill has returned) and TensorRT-LLM (the generation server allocates when the
# context phase is done) admit after the prefill.
ENGINE_PREALLOCATES_DECODE_KV = frozenset({"sglang"})


def engine_preallocates_decode_kv(engine: str) -> bool:
    """Does `engine`'s decode side reserve KV before the prefill (an unknown engine: no)?"""
    try:
        return canonical_engine(engine) in ENGINE_PREALLOCATES_DECODE_KV
    except ConfigError:
        return False


@dataclass(frozen=True)
class KVTransfer:
    """One prompt's KV move: bytes at each granularity, the links used and the time."""

    model: str
    tokens: int
    kv_dtype: str
    transit_dtype: str
    path: str
    total_bytes: float  # whole prompt, all layers: tokens x bytes_per_token + state_bytes, B
    # KV that grows with the prompt, averaged over its tokens (window-capped layers included):
    # (total - state) / tokens, B; equals ModelSpec.kv_bytes_per_token (`pdplan models`) for a
    # prompt within every window
    bytes_per_token: float
    bytes_per_token_layer: float  # one full-attention layer, one token, B
    # fixed recurrent / SSM state of the sequence (linear-attention and Mamba layers), B: sent
    # once whatever the prompt length, in its own dtype (ModelSpec.linear_state_bytes)
    state_bytes: float
    senders: int  # prefill GPUs sending in parallel, each over its own link
    receivers: int  # decode GPUs receiving in parallel
    shard_bytes: float  # bytes one sending GPU sends
    link_gbps: float  # line rate of one link, Gb/s (10^9 bit/s)
    efficiency: float  # achieved share of line rate
    latency_s: float
    time_s: float
    notes: tuple[str, ...] = field(default=())

    @property
    def time_ms(self) -> float:
        return self.time_s * 1e3


def _link_gbps(path: str, gpu: GPUSpec | None, link_gbps: float | None) -> float:
    if link_gbps is not None:
        if not (link_gbps > 0 and math.isfinite(link_gbps)):  # NaN / inf: no real link
            raise ConfigError(f"--link-gbps={link_gbps} must be a positive finite Gb/s")
        return link_gbps
    if gpu is None:
        return KV_PATHS[path]["gbps"]
    # GPUSpec: nic in Gb/s; scale-up and PCIe in GB/s (x8 -> Gb/s)
    return {"nic": gpu.nic_gbps, "nvlink": gpu.scaleup_gbps * 8, "pcie": gpu.pcie_gbps * 8}[path]


def kv_shards(model: ModelSpec, lay: Layout | None) -> int:
    """Distinct KV shards of ONE request under a layout (= GPUs that send / receive it):
    KV heads split over min(TP, n_kv) ranks (an MLA latent: 1, the same on every TP rank) x
    PP stages (each its own layers) x CP ranks (each its own tokens). Layout.tp is the TP of
    one attention-DP group: with attention DP (dp > 1) a request lives on one DP rank, so
    dp never multiplies (dp8-ep8 = tp1 x dp8: one shard). None = one shard."""
    if lay is None:
        return 1
    heads = 1 if model.mla is not None else min(lay.tp, model.num_kv_heads)
    layers = min(lay.pp, model.num_layers)
    return heads * layers * lay.cp


_parallel_links = kv_shards  # the old private name


def _check_args(tokens: int, path: str, kv_dtype: str, efficiency: float | None) -> float:
    """Refuse an empty prompt, an unknown path or dtype and an efficiency outside (0, 1];
    return the efficiency to use."""
    if tokens < 1:
        raise ConfigError(f"--tokens={tokens}: need at least 1 token")
    if path not in KV_PATHS:
        raise ConfigError(f"unknown path {path!r}; use one of {', '.join(KV_PATHS)}")
    kv_dtype_bytes(kv_dtype)  # validates the name: a KV-cache dtype
    eff = KV_PATHS[path]["efficiency"] if efficiency is None else efficiency
    if not 0 < eff <= 1:
        raise ConfigError(f"--efficiency={eff} must be a number in (0, 1]")
    return eff


# What a KV cache may be sent as: the KV-cache dtypes, plus int4 with one FP16 scale per 128
# values (DTYPE_BYTES; 4-bit KV as in KIVI, arXiv:2402.02750, and LMCache's compressed
# transfers). Weight-only formats (int8_wo, w4a8, mxfp4) and fp32 are not KV dtypes.
TRANSIT_DTYPES: tuple[str, ...] = (*KV_DTYPES, "int4")


def check_transit_dtype(dtype: str) -> str:
    """`dtype` as TRANSIT_DTYPES names it (an engine's alias such as fp8_e4m3 mapped); a
    ConfigError listing TRANSIT_DTYPES for any other name."""
    key = canonical_kv_dtype(dtype)
    if key not in TRANSIT_DTYPES:
        raise ConfigError(
            f"unknown transit dtype {dtype!r}; send the KV as one of {', '.join(TRANSIT_DTYPES)}"
        )
    return key


def kv_transfer(
    model: ModelSpec,
    tokens: int,
    *,
    kv_dtype: str = "bf16",
    transit_dtype: str | None = None,
    path: str = "nic",
    gpu: GPUSpec | None = None,
    link_gbps: float | None = None,
    efficiency: float | None = None,
    latency_s: float | None = None,
    prefill_layout: Layout | None = None,
    decode_layout: Layout | None = None,
) -> KVTransfer:
    """Bytes and time to ship a `tokens`-token prompt's KV cache from prefill to decode."""
    eff = _check_args(tokens, path, kv_dtype, efficiency)
    transit = kv_dtype if transit_dtype is None else check_transit_dtype(transit_dtype)
    transit_text = transit_note(kv_dtype, transit)  # refuses an up-cast
    total = model.kv_bytes(tokens, transit)  # window-capped + linear state, from the shape
    state = model.linear_state_bytes()  # fixed per sequence, not per token
    lat = KV_PATHS[path]["latency_s"] if latency_s is None else latency_s
    gbps = _link_gbps(path, gpu, link_gbps)
    senders = kv_shards(model, prefill_layout)
    receivers = kv_shards(model, decode_layout)
    bottleneck = max(total / senders, total / receivers)
    return KVTransfer(
        model=model.name,
        tokens=tokens,
        kv_dtype=kv_dtype,
        transit_dtype=transit,
        path=path,
        total_bytes=total,
        bytes_per_token=(total - state) / tokens,
        bytes_per_token_layer=model.kv_layer_bytes("full", transit),
        state_bytes=state,
        senders=senders,
        receivers=receivers,
        shard_bytes=total / senders,
        link_gbps=gbps,
        efficiency=eff,
        latency_s=lat,
        time_s=lat + bottleneck / (gbps * 1e9 / 8 * eff),  # B / (Gb/s * 1e9 / 8 bit * eta)
        notes=transit_text + _notes(model, senders, receivers) + _size_notes(model, transit),
    )


def transit_note(kv: str, transit: str) -> tuple[str, ...]:
    """What quantising the KV in transit saves; an up-cast (an fp8 cache sent as bf16) is
    refused. Block-scaled dtypes carry their scales in DTYPE_BYTES (fp4: one FP8 scale per 16
    values, int4: one FP16 scale per 128); fp8 / int8 KV use per-tensor scales (vLLM's
    k_scale / v_scale, a few bytes per layer), so no scale bytes are counted for them."""
    if transit.lower() == kv.lower():
        return ()
    kb, tb = dtype_bytes(kv), dtype_bytes(transit)
    if tb > kb:
        raise ConfigError(
            f"transit dtype {transit} ({tb:g} B per value) is wider than the {kv} KV cache "
            f"({kb:g} B): quantising in transit only narrows; send the {kv} cache as it is"
        )
    if tb == kb:
        return (f"sent as {transit}: the same {tb:g} B per value as the {kv} cache",)
    scale = Fraction(tb - 2 ** math.floor(math.log2(tb))).limit_denominator(1024)  # B / value
    what = (
        f"per-block scales included: +{scale} B per value"
        if scale > 0
        else "per-tensor scales, so no per-block scale bytes"
    )
    return (f"quantised in transit {kv} -> {transit}: {tb / kb:.0%} of the bytes ({what})",)


def _notes(model: ModelSpec, senders: int, receivers: int) -> tuple[str, ...]:
    out = []
    if model.mla is not None:
        out.append("MLA latent is the same on every TP rank: one rank per stage sends it")
    if senders != receivers:
        out.append(f"{senders} sending vs {receivers} receiving links: the fewer set the time")
    return tuple(out)


def _size_notes(model: ModelSpec, transit: str) -> tuple[str, ...]:
    """What in the prompt's bytes does not grow one token's worth per token: window caps and
    the fixed recurrent state (so KV per token means what `pdplan models` means by it)."""
    out = []
    if model.sliding_window and "sliding" in model.layer_types:
        out.append(f"sliding-window layers hold at most {model.sliding_window} tokens")
    if model.csa is not None:  # DeepSeek-V4: raw K=V of the newest `window` tokens per layer
        w = model.csa.window
        out.append(
            f"compressed (csa/hca) layers also keep their newest {w} tokens uncompressed: "
            f"{model.csa_window_bytes(1, transit):,.0f} B per token for those, at most "
            f"{model.csa_window_bytes(w, transit):,.0f} B per sequence (in KV per token here, "
            f"not in the long-context KV per token of `pdplan models`)"
        )
    state = model.linear_state_bytes()
    if state:
        n = model.count_layers("linear")
        out.append(
            f"{n} linear-attention / SSM layers keep a fixed {state:,.0f} B recurrent state per "
            f"sequence whatever its length (in its own dtype, not re-typed in transit): sent "
            f"once, in the prompt's total, not in KV per token"
        )
    return tuple(out)


@dataclass(frozen=True)
class SeedKVExample:
    """The seed's s5 claim for a 70B model's 4000-token prompt next to the computed numbers."""

    seed_bytes: float
    seed_ms: float
    bytes: float
    bytes_per_token: float
    ms: float
    factor: float  # computed / claimed bytes


def seed_kv_example(model: ModelSpec | None = None) -> SeedKVExample:
    """Seed: "70B, 4000 tokens, FP16: KV ~600 MB, ~24 ms over 200 Gb/s". Recomputed from the
    shape (Llama-3.1-70B: 2*80*8*128*2 B = 327,680 B/token) on one 200 Gb/s link at line rate."""
    if model is None:
        from pdplan.catalog.models import get_model  # lower layer; imported late (optional)

        model = get_model("llama-3.1-70b")
    kv = kv_transfer(model, 4000, kv_dtype="bf16", link_gbps=200, efficiency=1.0, latency_s=0.0)
    seed_bytes = 600e6  # seed s5: "KV about 600 MB"
    return SeedKVExample(
        seed_bytes,
        24.0,
        kv.total_bytes,
        kv.bytes_per_token,
        kv.time_ms,
        kv.total_bytes / seed_bytes,
    )


def required_gbps(kv_bytes_per_token: float, prefill_tokens_per_s: float) -> float:
    """Link rate (Gb/s) needed to keep up with prefill: tokens/s * KV B/token * 8 bits."""
    return prefill_tokens_per_s * kv_bytes_per_token * 8 / 1e9
