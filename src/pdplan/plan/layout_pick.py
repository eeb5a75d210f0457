"""The instance layout `pdplan ratio` and `pdplan estimate` run when none is given."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pdplan.errors import ConfigError, DoesNotFitError
from pdplan.parallel.checks import check_layout
from pdplan.parallel.layout import Layout

if TYPE_CHECKING:
    from pdplan.catalog.gpu_spec import GPUSpec
    from pdplan.catalog.model_spec import ModelSpec
    from pdplan.perf.memory import MemoryPlan

__all__ = [
    "DEFAULT_LAYOUT",
    "DEFAULT_LAYOUT_HELP",
    "DEFAULT_PPS",
    "KV_BATCH_CAP",
    "KVNeed",
    "KVSizing",
    "default_layout",
    "past_context",
    "request_kv_text",
    "span",
    "valid",
]

# Quick-start instance layout: the seed's example A job (Llama-3.1-70B on 4 H100s, README).
DEFAULT_LAYOUT = "tp4"
# TP widths tried for the default, GPUs per instance: the default, then wider powers of two up
# to a 72-GPU NVLink rack (GB200 NVL72 scale-up domain); widths past the node/domain are skipped.
_DEFAULT_TPS = (4, 8, 16, 32, 72)
# Narrower TPs tried, widest first, only when no default width is valid for the model (TP must
# divide the attention / KV heads: phi-4's 10 KV heads, Qwen2.5-0.5B's 2 rule out TP 4 and 8).
_NARROW_TPS = (2, 1)
# Pipeline depths tried once TP fills the node, stages (seed s3: TP in the node, PP across nodes).
DEFAULT_PPS = (2, 4, 8)
# Requests (of ISL + OSL tokens) whose KV a default decoding layout must hold, at most.
# Roofline of a decode step (seed s4: decode re-reads the weights and the KV every step), per
# GPU: t = (W + b * n * k) / HBM for W weight bytes and b requests of n tokens of k KV bytes
# each, so per-GPU decode throughput is b / (b + b_w) of its KV-bound limit, where
# b_w = W / (n * k) is the batch whose KV read equals the weight read: below it most of each
# step re-reads the weights. The default asks for room for min(b_w, KV_BATCH_CAP) requests
# (and no more than a closed loop's clients). The cap is an assumption stated here: an
# instance that cannot hold 16 requests amortises each weight read over fewer than 16 tokens,
# a latency-only deployment; W counts every expert of an MoE model, which at small batches
# reads only the experts its tokens pick, so b_w is an upper bound there and the cap bounds it.
KV_BATCH_CAP = 16  # requests
DEFAULT_LAYOUT_HELP = (
    f"{DEFAULT_LAYOUT} when the model fits it, else the first wider TP in the node that does "
    "(tp8, ...), then PP across nodes (tp8-pp2, ...), or tp2 / tp1 for a model whose heads "
    "no TP of 4 or 8 divides; fitting includes KV room for "
    f"min({KV_BATCH_CAP}, clients) requests of ISL + OSL (fewer where that KV already "
    "outweighs the weights): the layout `pdplan ratio` picks"
)


@dataclass(frozen=True)
class KVSizing:
    """How an instance sizes its KV pool: `engine`'s default (perf.memory.engine_kv_memory;
    None: 0.9 of the device), or its KV-memory flag set to `mem_fraction` (--mem-fraction),
    read as that engine reads it (of the device, or of the free memory for TensorRT-LLM)."""

    engine: str | None = None
    mem_fraction: float | None = None

    def of(self, gpu: GPUSpec, lay: Layout, speculative: bool = False) -> tuple[float, bool]:
        """(mem_fraction, of_free) for plan_memory of `lay` on `gpu`."""
        from pdplan.perf.memory import engine_kv_memory

        frac, of_free = engine_kv_memory(self.engine or "", gpu, lay, speculative=speculative)
        return (frac if self.mem_fraction is None else self.mem_fraction), of_free


@dataclass(frozen=True)
class KVNeed:
    """KV room a default layout must leave: one prompt of `tokens` (ISL) on a prefill
    instance, or, where it decodes (`tokens` = ISL + OSL), min(`requests`, b_w) requests
    (KV_BATCH_CAP says why); a layout that holds at least one is the fallback."""

    tokens: int = 0
    requests: int = KV_BATCH_CAP
    role: str = "decode"  # "prefill", "decode" or "agg" (an instance that decodes)

    def balance(self, mem: MemoryPlan, lay: Layout) -> int:
        """b_w: requests whose KV read per decode step equals the weight read (all DP groups)."""
        per_req = self.tokens * mem.kv_bytes_per_token  # bytes per GPU
        return math.ceil(mem.weights_bytes / per_req) * lay.dp if per_req > 0 else 1

    def wanted(self, mem: MemoryPlan, lay: Layout) -> int:
        """Requests `lay`'s KV must hold: 1 on a prefill instance, else min(requests, b_w)."""
        if self.role == "prefill" or self.tokens <= 0:
            return 1
        return max(1, min(self.requests, self.balance(mem, lay)))

    def held(self, mem: MemoryPlan) -> int:
        """Requests of `tokens` the KV cache holds at once."""
        return mem.kv_capacity_tokens // self.tokens if self.tokens > 0 else self.requests

    def what(self) -> str:
        """What one unit of `tokens` is called in messages."""
        return "prompt" if self.role == "prefill" else "request"


def span(gpu: GPUSpec) -> int:
    """GPUs one TP group may span: the node, or the NVLink domain where it is wider (NVL72)."""
    return max(gpu.gpus_per_node, gpu.scaleup_domain)


def valid(spec: ModelSpec, gpu: GPUSpec, lay: Layout) -> bool:
    """Does `lay` pass the seed's validity rules for `spec` on `gpu`'s node and domain?"""
    dom = {"scaleup_domain": gpu.scaleup_domain, "gpus_per_node": gpu.gpus_per_node}
    return check_layout(spec, lay, **dom).ok


def _candidates(spec: ModelSpec, gpu: GPUSpec) -> list[Layout]:
    """The default's layouts in the order tried: TP in the node, then PP across nodes."""
    tps = [t for t in _DEFAULT_TPS if t <= span(gpu)] or [1]
    return [Layout(tp=t) for t in tps] + [Layout(tp=tps[-1], pp=p) for p in DEFAULT_PPS]


def _invalid(spec: ModelSpec, gpu: GPUSpec, lay: Layout) -> str:
    """The first validity rule `lay` breaks for `spec` on `gpu`."""
    dom = {"scaleup_domain": gpu.scaleup_domain, "gpus_per_node": gpu.gpus_per_node}
    return check_layout(spec, lay, **dom).errors[0]


def _short(lay: Layout, mem: MemoryPlan, need: KVNeed) -> str:
    """Why a layout whose weights fit was passed over: KV room for too few requests."""
    held = need.held(mem)
    if held < 1:
        return f"{lay} leaves KV room for no {need.what()} of {need.tokens:,} tokens"
    cap = f"{KV_BATCH_CAP}"
    if need.requests < KV_BATCH_CAP:
        cap = f"the {need.requests} clients it serves (up to {KV_BATCH_CAP})"
    role = {"agg": "an aggregated instance", "prefill": "a prefill instance"}
    return (
        f"{lay} leaves KV room for only {held} requests of {need.tokens:,} tokens; "
        f"{role.get(need.role, 'a decode instance')} should hold {need.wanted(mem, lay)}: the "
        f"batch whose KV read per decode step equals its weight read "
        f"({need.balance(mem, lay)}), but at most {cap}; a smaller batch spends most of each "
        "step re-reading the weights"
    )


def _note(picked: list[str] | None, why: list[str], lay: Layout, tail: str = "") -> None:
    """Say once in `picked` why the default is `lay`, not the first layout tried."""
    if picked is None or not why:
        return
    reasons = "; ".join(why) if len(why) <= 3 else f"{why[0]}; ...; {why[-1]}"
    msg = f"{reasons}; using {lay}{tail}"
    if msg not in picked:
        picked.append(msg)


def default_layout(
    spec: ModelSpec,
    gpu: GPUSpec,
    kv_dtype: str = "bf16",
    picked: list[str] | None = None,
    weight_dtype: str | None = None,
    need: KVNeed | None = None,
    draft_layers: int = 0,
    engine: str | None = None,
    mem_fraction: float | None = None,
) -> Layout:
    """DEFAULT_LAYOUT when it holds the weights and `need`'s KV room, else the first of wider
    TP in the node, then PP across nodes, that does; when none leaves that room, the one that
    holds the most requests (`need` None: the weights alone). Why it is not the first layout
    tried goes to `picked` (once). `draft_layers`: a speculative draft head the instance
    also holds (its weights and KV layer, perf.memory.plan_memory). `engine` sizes each
    layout's KV pool as that engine does by default (perf.memory.engine_kv_memory; None: 0.9
    of the device), `mem_fraction` as its flag set so."""
    from pdplan.perf.memory import plan_memory

    need, cands = need or KVNeed(), _candidates(spec, gpu)
    sizing = KVSizing(engine, mem_fraction)
    why: list[str] = []
    if not any(valid(spec, gpu, c) for c in cands):  # e.g. 10 KV heads: no TP of 4 or 8
        why.append(f"{cands[0]} is not valid for {spec.name} ({_invalid(spec, gpu, cands[0])})")
        cands = [Layout(tp=t) for t in _NARROW_TPS]
    short: list[tuple[Layout, MemoryPlan]] = []  # weights fit, KV room short of `wanted`
    last: DoesNotFitError | None = None
    for lay in (c for c in cands if valid(spec, gpu, c)):
        frac, of_free = sizing.of(gpu, lay, speculative=draft_layers > 0)
        try:
            mem = plan_memory(spec, gpu, lay, weight_dtype, kv_dtype, context=need.tokens or None,
                              draft_layers=draft_layers, mem_fraction=frac,
                              of_free=of_free)  # fmt: skip
        except DoesNotFitError as e:
            why.append(f"{lay} does not fit ({str(e).removeprefix('does not fit: ')})")
            last = e
            continue
        if need.held(mem) >= need.wanted(mem, lay):
            _note(picked, why, lay)
            return lay
        why.append(_short(lay, mem, need))
        short.append((lay, mem))
    best = max(short, key=lambda s: s[1].kv_capacity_tokens, default=None)
    if best is not None and need.held(best[1]) >= 1:
        tail = f", the layout up to {cands[-1]} that holds the most ({need.held(best[1])})"
        _note(picked, why, best[0], tail)
        return best[0]
    if best is not None:
        raise _request_too_big(spec, need, kv_dtype, best, cands[-1])
    if last is None:  # every candidate breaks a validity rule (e.g. heads TP does not divide)
        raise ConfigError(
            f"no default layout is valid for {spec.name} ({cands[0]}: "
            f"{_invalid(spec, gpu, cands[0])}): pass a layout explicitly"
        )
    raise DoesNotFitError(
        f"no layout up to {cands[-1]} holds {spec.name}; {last}",
        need_bytes=last.need_bytes,
        have_bytes=last.have_bytes,
    )


def request_kv_text(spec: ModelSpec, tokens: int, kv_dtype: str, what: str = "request") -> str:
    """'a request of N tokens needs X GiB of BF16 KV cache' (model total, one replica)."""
    gib = tokens * spec.kv_bytes_per_token(kv_dtype, context=tokens) / 2**30
    return f"a {what} of {tokens:,} tokens needs {gib:,.1f} GiB of {kv_dtype.upper()} KV cache"


def past_context(spec: ModelSpec, tokens: int) -> str:
    """'; it also exceeds M's N-token context window' when it does, else ''."""
    limit = int(getattr(spec, "max_position_embeddings", 0) or 0)
    if limit and tokens > limit:
        return f"; it also exceeds {spec.name}'s {limit:,}-token context window"
    return ""


def _request_too_big(
    spec: ModelSpec, need: KVNeed, kv_dtype: str, best: tuple[Layout, MemoryPlan], last: Layout
) -> DoesNotFitError:
    """The weights fit, but no default layout holds one request's KV: say by how much."""
    lay, mem = best
    per_tok = spec.kv_bytes_per_token(kv_dtype, context=need.tokens)  # bytes, whole model
    cap = mem.kv_capacity_tokens
    what = f"{need.what()} ({'ISL' if need.role == 'prefill' else 'ISL + OSL'})"
    fp8 = "" if kv_dtype.lower().startswith("fp") else ", --kv-dtype fp8"
    return DoesNotFitError(
        f"{spec.name}'s weights fit, but {request_kv_text(spec, need.tokens, kv_dtype, what)}, "
        f"more than the largest layout up to {last} holds ({lay}: "
        f"{cap * per_tok / 2**30:,.1f} GiB, {cap:,} tokens){past_context(spec, need.tokens)}: "
        f"shorter requests{fp8} or a GPU with more memory",
        need_bytes=need.tokens * per_tok,
        have_bytes=cap * per_tok,
    )
