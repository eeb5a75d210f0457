"""CostModel: time of one engine iteration for model x GPU x layout (roofline + overheads).

Per layer and step, each op costs max(FLOPs / (peak * eta_c(M)), bytes / (HBM * eta_m)) with
eta_c rising with the GEMM's M (design-notes s4); attention costs FLOPs in prefill and KV bytes
in decode; MoE touches only the experts its tokens pick; collectives cost alpha + bytes / bw;
a fixed per-kernel latency and a per-step framework overhead are added. Every efficiency and
overhead comes from perf/data/efficiency.yaml (per engine, per GPU), never from code.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.model_parts import kv_dtype_bytes
from pdplan.catalog.model_spec import ModelSpec, dtype_bytes
from pdplan.parallel.layout import Layout
from pdplan.perf import layer_costs as lc
from pdplan.perf.attn_sparse import topk_context
from pdplan.perf.cost_queries import CostQueries
from pdplan.perf.dp import EngineLimits, busiest_rank_shape
from pdplan.perf.efficiency import (
    Efficiency,
    canonical_engine,
    check_engine_vendor,
    check_kv_cache_dtype,
    get_efficiency,
    matmul_scale,
)
from pdplan.perf.hardware import check_weight_dtypes, compute_dtype, pad_bytes, padding_cap
from pdplan.perf.pp import pp_micro_shape
from pdplan.perf.step import BatchShape

__all__ = ["CostModel", "StepBreakdown"]

ACT_BYTES = 2.0  # activations travel and are stored in BF16 (2 B)
# Prompt-sized token counts read the token parts off a TOKEN_GRID-token grid by linear
# interpolation: the parts are piecewise linear in tokens (each GEMM the max of a compute and a
# memory line, collectives alpha + bytes / bw, routed experts saturated past a few hundred
# tokens), so only a grid cell holding a kink is off: < 0.03 % on the MoE models tried, float
# round-off on dense ones (tests/perf, bound 0.3 %). The simulator then evaluates ~250 grid
# points instead of one layer sum per distinct prompt batch size.
TOKEN_GRID_FROM, TOKEN_GRID = 512, 32


@dataclass(frozen=True)
class StepBreakdown:
    """Seconds of one step by op family (sums to `total`)."""

    gemm: float
    attention: float
    moe: float
    comm: float
    lm_head: float
    overhead: float

    @property
    def total(self) -> float:
        return self.gemm + self.attention + self.moe + self.comm + self.lm_head + self.overhead


class CostModel(CostQueries, EngineLimits):
    """Step times of one instance. Implements the StepModel protocol (perf/step.py)."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GPUSpec,
        layout: Layout,
        engine: str = "vllm",
        weight_dtype: str | None = None,
        kv_dtype: str = "bf16",
        *,
        moe_dtype: str | None = None,
        eff: Efficiency | None = None,
        scaleup_domain: int | None = None,
    ) -> None:
        check_engine_vendor(engine, gpu.name, gpu.vendor, gpu.fp16_only)
        engine = canonical_engine(engine)
        self.model, self.gpu, self.layout, self.engine = model, gpu, layout, engine
        self.weight_dtype = weight_dtype or model.weight_dtype
        self.moe_dtype = moe_dtype or model.default_moe_dtype(weight_dtype)
        self.kv_dtype = kv_dtype
        check_weight_dtypes(gpu.name, gpu.fp16_only, self.weight_dtype, self.moe_dtype)
        check_kv_cache_dtype(engine, kv_dtype, bool(gpu.fp4_tflops))
        self.eff = eff or get_efficiency(engine, gpu.name, gpu.hbm_gib)
        domain = scaleup_domain or gpu.scaleup_domain
        self._links = lc.Links.for_gpu(gpu, self.eff, domain)
        self._classes = lc.layer_classes(model)
        self._hw = self._hardware()
        # decode_affine's fits, keyed (batch, side): side 0 one fit over all contexts, 1 / 2
        # below / at-or-above a DSA kink (the secant and the lower side differ there)
        self._decode_cache: dict[tuple[int, int], tuple[float, float]] = {}
        self._token_cache: dict[int | tuple[int, int], tuple[float, float, float]] = {}
        self._lm_cache: dict[int, float] = {}
        # the LM head: BF16 weights (2 B / element) at the BF16 rate
        self._lm_pad_cap = padding_cap(
            self._hw.attn_flops, 2.0, self.eff.gemm_eta, self._hw.hbm, self.eff.mem_eta
        )
        self._attn = [
            (cls.kind, count, lc.attn_coeffs(model, cls.kind, layout, self.eff, self._hw))
            for cls, count in self._classes
        ]
        # fast path of step_time when every layer is dense full attention (no window, linear
        # layers or DSA top-k)
        # per-sequence context at which a decode step's slope changes (DSA reads only top-k
        # keys past it; DeepSeek-V4 "csa" layers top-k of entries that fold `ratio` tokens
        # each); 0 = the step is affine in the context everywhere
        self.decode_kink = topk_context(model)
        dsa = self.decode_kink > 0
        self._simple_attn = not dsa and all(k == "full" for k, _, _ in self._attn)
        self._grp = layout.dp * layout.cp
        # DP attention in a MoE model: the dp ranks step together (the expert collectives sync
        # every layer), so a step lasts as long as its busiest rank (see _dp_busiest)
        self._dp_sync = layout.dp if (layout.dp > 1 and model.moe is not None) else 1
        self._pair_s = sum(c * co[0] for _, c, co in self._attn)
        self._ctx_s = sum(c * co[1] for _, c, co in self._attn)
        kernels = self.eff.kernels_per_layer * lc.full_layers(self._classes)
        kernels += self.eff.indexer_kernels * model.num_layers if dsa else 0.0
        kernels += lc.moe_kernels(model, self.eff) + lc.mla_kernels(model, self.eff)
        self._fixed_overhead = self.eff.step_s + self.eff.kernel_s * kernels
        self._fixed_cache: dict[int | tuple[int, int], float] = {}
        self._pp = layout.pp

    def _hardware(self) -> lc.Hardware:
        """Peak rates (FLOP/s, bytes/s) and bytes per element this instance's kernels run at."""
        gpu, eff = self.gpu, self.eff
        k = matmul_scale(gpu.matmul_eta) * 1e12  # TFLOP/s -> FLOP/s, de-rated by MAMF / peak
        gemm_flops = gpu.tflops(compute_dtype(self.weight_dtype)) * k
        moe_flops = gpu.tflops(compute_dtype(self.moe_dtype)) * k
        # FP8 weights stream at fp8_stream_eta of the usual rate: counted as more bytes
        wb = dtype_bytes(self.weight_dtype) / self._stream_eta(self.weight_dtype)
        mb = dtype_bytes(self.moe_dtype) / self._stream_eta(self.moe_dtype)
        hbm = gpu.hbm_bytes_per_s
        return lc.Hardware(
            gemm_flops=gemm_flops, moe_flops=moe_flops, attn_flops=gpu.bf16_tflops * k, hbm=hbm,
            wb=wb, mb=mb, kvb=kv_dtype_bytes(self.kv_dtype), fp8_flops=gpu.tflops("fp8") * k,
            pad_cap=padding_cap(gemm_flops, pad_bytes(self.weight_dtype, wb), eff.gemm_eta, hbm,
                                eff.mem_eta),
            moe_pad_cap=padding_cap(moe_flops, pad_bytes(self.moe_dtype, mb), eff.gemm_eta, hbm,
                                    eff.mem_eta),
        )  # fmt: skip

    def _stream_eta(self, dtype: str) -> float:
        """Weight-streaming efficiency of `dtype`'s GEMMs relative to eff.mem_eta."""
        return self.eff.fp8_stream_eta if dtype.lower() == "fp8" else 1.0

    # ---- StepModel protocol ------------------------------------------------------------------
    def step_time(self, shape: BatchShape) -> float:
        """Seconds of one iteration computing `shape` (every sequence advances once).
        Same sum as breakdown(shape).total, written flat: the simulator calls it per event."""
        if self._pp > 1:
            shape = pp_micro_shape(shape, self._pp)
        tokens = shape.prefill_tokens + shape.decode_seqs
        if tokens <= 0:
            return 0.0
        ashape = self._dp_busiest(shape) if self._dp_sync > 1 and shape.prefill_seqs else shape
        atokens = ashape.prefill_tokens + ashape.decode_seqs
        key = tokens if atokens == tokens else (tokens, atokens)
        fixed = self._fixed_cache.get(key)
        if fixed is None:
            fixed = sum(self._token_parts(tokens, atokens)) + self._fixed_overhead
            self._fixed_cache[key] = fixed
        rows = shape.decode_seqs + shape.prefill_seqs
        if self._simple_attn:  # full-attention layers only: pairs * a + ctx * b, summed
            grp = self._grp
            attn = ashape.prefill_pairs / grp * self._pair_s
            if shape.decode_seqs:
                attn += shape.decode_ctx / grp * self._ctx_s
        else:
            m, lay, eff, hw = self.model, self.layout, self.eff, self._hw
            attn = sum(
                count * lc.attention_time(kind, co, m, lay, eff, hw, ashape)
                for kind, count, co in self._attn
            )
        return fixed + attn + self._lm_head(rows) + self._host_s(rows, ashape.prefill_tokens)

    def _dp_busiest(self, shape: BatchShape) -> BatchShape:
        return busiest_rank_shape(shape, self._dp_sync)

    def decode_affine(self, batch: int, ctx: float | None = None) -> tuple[float, float]:
        """(a, c) with step_time ~= a + c * decode_ctx for a pure-decode batch of `batch`.
        With a DSA top-k (decode_kink tokens per sequence) the step is linear on each side of
        ctx = batch * decode_kink; `ctx` picks the side (None: one secant over both)."""
        kink = self.decode_kink
        upper = bool(kink and ctx is not None and ctx >= batch * kink)
        # the secant (ctx None) and the lower side are different fits: keyed apart, or the
        # sim's probe decode_affine(1) (sim/checks.py) made every b=1 run below the kink
        # read the secant slope (4x too flat for DeepSeek-V3.2 at TP8)
        key = (batch, (2 if upper else 1) if kink and ctx is not None else 0)
        hit = self._decode_cache.get(key)
        if hit is not None:
            return hit
        lo, hi = batch * 1024, batch * 8192
        if kink and ctx is not None:
            lo, hi = (batch * kink, batch * kink * 4) if upper else (batch, batch * kink)
        t_lo = self.step_time(BatchShape(decode_seqs=batch, decode_ctx=lo))
        t_hi = self.step_time(BatchShape(decode_seqs=batch, decode_ctx=hi))
        c = max(0.0, (t_hi - t_lo) / (hi - lo))
        out = (t_lo - c * lo, c)
        self._decode_cache[key] = out
        return out

    # ---- convenience -------------------------------------------------------------------------
    def _token_parts(
        self, tokens: int, attn_tokens: int | None = None
    ) -> tuple[float, float, float]:
        """(gemm, moe, comm) seconds of a step of `tokens` tokens: the parts that depend on the
        token count alone, memoised per count (the simulator asks for few distinct counts).
        `attn_tokens` (default `tokens`) is dp x the busiest DP rank's tokens (_dp_busiest)."""
        attn_tokens = tokens if attn_tokens is None else attn_tokens
        key = tokens if attn_tokens == tokens else (tokens, attn_tokens)
        hit = self._token_cache.get(key)
        if hit is None and key == tokens and tokens > TOKEN_GRID_FROM and tokens % TOKEN_GRID:
            lo = tokens - tokens % TOKEN_GRID
            w = (tokens - lo) / TOKEN_GRID
            a, b = self._token_parts(lo), self._token_parts(lo + TOKEN_GRID)
            hit = self._token_cache[key] = (
                a[0] + (b[0] - a[0]) * w,
                a[1] + (b[1] - a[1]) * w,
                a[2] + (b[2] - a[2]) * w,
            )
        if hit is None:
            parts = lc.Parts()
            for cls, count in self._classes:
                lc.add_token_parts(
                    parts,
                    cls,
                    count,
                    self.model,
                    self.layout,
                    self.eff,
                    self._hw,
                    self._links,
                    tokens,
                    attn_tokens,
                )
            lay = self.layout  # activations of one stage's tokens, B, to the next stage
            pp = self._links.pp_boundaries(
                attn_tokens / lay.dp * self.model.hidden_size * ACT_BYTES, lay.pp, lay.stage_gpus
            )
            hit = (parts.gemm, parts.moe, parts.comm + pp)
            self._token_cache[key] = hit
        return hit

    def _lm_head(self, rows: int) -> float:
        hit = self._lm_cache.get(rows)
        if hit is None:
            m, lay = self.model, self.layout
            hit = lc.gemm_time(
                rows / lay.dp,
                m.hidden_size,
                m.vocab_size / lay.tp,
                2.0,
                self._hw.attn_flops,
                self._hw.hbm,
                self.eff,
                pad_cap=self._lm_pad_cap,
            )
            self._lm_cache[rows] = hit
        return hit

    def breakdown(self, shape: BatchShape) -> StepBreakdown:
        """Seconds of one step of `shape` by op family (a micro-batch's, under PP)."""
        if self._pp > 1:
            shape = pp_micro_shape(shape, self._pp)
        tokens = shape.tokens
        if tokens <= 0:
            return StepBreakdown(0, 0, 0, 0, 0, 0)
        ashape = self._dp_busiest(shape) if self._dp_sync > 1 and shape.prefill_seqs else shape
        gemm, moe, comm = self._token_parts(tokens, ashape.tokens)
        m, lay, eff, hw = self.model, self.layout, self.eff, self._hw
        attn = sum(
            count * lc.attention_time(kind, co, m, lay, eff, hw, ashape)
            for kind, count, co in self._attn
        )
        rows = shape.decode_seqs + shape.prefill_seqs  # rows that need logits
        # fixed per-step framework time + per-layer kernel latency + per-rank host work
        overhead = self._fixed_overhead + self._host_s(rows, ashape.prefill_tokens)
        return StepBreakdown(gemm, attn, moe, comm, self._lm_head(rows), overhead)

    def _host_s(self, rows: int, prompt_tokens: float) -> float:
        """Per-sequence CPU work (scheduler bookkeeping, sampling, detokenise: eff.seq_s) and
        per prompt token work that TP does not split (eff.prompt_token_s), on the busiest
        attention-DP rank: every DP rank runs its own scheduler process (vLLM engine core,
        SGLang DP worker, TensorRT-LLM executor), so the ranks do this work side by side.
        `prompt_tokens` is the busiest-rank shape's (x dp, see _dp_busiest)."""
        dp = self.layout.dp
        return (self.eff.seq_s * rows + self.eff.prompt_token_s * prompt_tokens) / dp
