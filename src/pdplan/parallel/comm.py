"""The seed's communication table with real numbers: per layer, which collective moves how much.

Pure byte arithmetic; perf/collectives.py turns message sizes into seconds. Conventions:
`tokens` is one step's token count for the whole instance (BatchShape.tokens). A call's
`bytes_per_call` is the message size M each participating GPU holds (the buffer being reduced,
the gathered tensor, the slice sent): a ring all-reduce then moves 2(n-1)/n * M per GPU, a
reduce-scatter or all-gather (n-1)/n * M, an all-to-all or p2p M (`wire_bytes_per_call`).
Totals add wire bytes, so an all-reduce and SP's reduce-scatter + all-gather of the same
tensor count the same (a ring all-reduce is a reduce-scatter then an all-gather). Under PP a
GPU runs only its stage's layers, so per-layer ops count the first (largest) stage's layers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout

__all__ = ["COLLECTIVES", "CommOp", "comm_table", "comm_totals", "stage_layers", "wide_ep"]

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "p2p", "ring")


@dataclass(frozen=True)
class CommOp:
    """One kind of transfer: `count` calls per layer (scope "layer", on `layers` layers) or per
    step (scope "step"), each a message of `bytes_per_call` bytes per GPU in a group of
    `group_size` GPUs; `where` names the strategy that causes it."""

    name: str
    collective: str
    where: str
    group_size: int
    count: int
    bytes_per_call: float
    scope: str = "layer"
    layers: int = 1

    @property
    def calls_per_step(self) -> int:
        return self.count * (self.layers if self.scope == "layer" else 1)

    @property
    def bytes_per_step(self) -> float:
        """Message bytes per step (calls x bytes_per_call)."""
        return self.calls_per_step * self.bytes_per_call

    @property
    def wire_bytes_per_call(self) -> float:
        """Bytes one GPU sends per call with ring algorithms (Patarasuk & Yuan 2009; the
        bus-bandwidth factors of nccl-tests doc/PERFORMANCE.md): all-reduce 2(n-1)/n x M,
        reduce-scatter / all-gather (n-1)/n x M; all-to-all messages already hold only the
        off-rank share, p2p and ring passes send M."""
        n = self.group_size
        share = {"all-reduce": 2 * (n - 1) / n, "reduce-scatter": (n - 1) / n}
        share["all-gather"] = share["reduce-scatter"]
        return share.get(self.collective, 1.0) * self.bytes_per_call

    @property
    def wire_bytes_per_step(self) -> float:
        return self.calls_per_step * self.wire_bytes_per_call


def _tp_ops(
    model: ModelSpec, lay: Layout, t_local: float, ffn_layers: int, stage: range
) -> list[CommOp]:
    """TP: an all-reduce after attention and after the FFN (Megatron); with SP each becomes a
    reduce-scatter + all-gather of the same tensor (same wire bytes: AR = RS + AG, each
    (n-1)/n x M; see CommOp.wire_bytes_per_call)."""
    if lay.tp == 1:
        return []
    msg = t_local * model.hidden_size  # elements; comm_table multiplies by dtype bytes
    L = sum(1 for i in stage if model.layer_types[i] != "none")  # layers with a token mixer
    if not lay.sp:
        return [
            CommOp("attention out", "all-reduce", "TP", lay.tp, 1, msg, layers=L),
            CommOp("FFN out", "all-reduce", "TP", lay.tp, 1, msg, layers=ffn_layers),
        ]
    return [
        CommOp("attention out (SP)", "reduce-scatter", "TP+SP", lay.tp, 1, msg, layers=L),
        CommOp("attention in (SP)", "all-gather", "TP+SP", lay.tp, 1, msg, layers=L),
        CommOp("FFN out (SP)", "reduce-scatter", "TP+SP", lay.tp, 1, msg, layers=ffn_layers),
        CommOp("FFN in (SP)", "all-gather", "TP+SP", lay.tp, 1, msg, layers=ffn_layers),
    ]


def wide_ep(lay: Layout, gpus_per_node: int, top_k: int = 1) -> bool:
    """Does the layout's EP run all-to-all kernels? Engines switch them on (DeepEP, MNNVL)
    for an EP group with DP attention wider than one server, and only when EP exceeds the
    router's top-k: below that a token's top-k copies outweigh gathering every token once
    (all-to-all sends k (ep-1)/ep of each token, the gather (ep-1)/ep), and TensorRT-LLM's
    select_alltoall_method_type returns NotEnabled for moe_ep_size <= top_k. Otherwise the
    engines' default MoE communication gathers tokens (DP attention) or all-reduces them
    (TP attention): vLLM FusedMoEParallelConfig.use_all2all_kernels = dp_size > 1 and use_ep,
    all2all_backend default "allgather_reducescatter"; SGLang --moe-a2a-backend default none;
    TensorRT-LLM alltoall only with attention DP on MNNVL or DeepEP."""
    return lay.ep > max(1, top_k) and lay.dp > 1 and lay.stage_gpus > gpus_per_node


def _moe_ops(model: ModelSpec, lay: Layout, tokens: int, a2a: bool, stage: range) -> list[CommOp]:
    """Wide-EP all-to-alls (uniform routing), or DP-attention gathers around the FFN."""
    ops: list[CommOp] = []
    moe, h = model.moe, model.hidden_size
    n_moe = sum(model.is_moe_layer(i) for i in stage)  # the stage's routed-expert layers
    if moe is not None and a2a:
        # each EP rank dispatches tokens/ep tokens x top_k copies; under uniform routing a
        # fraction (ep-1)/ep lands on another rank: (T/ep)*k*h*b*(ep-1)/ep bytes per GPU
        d = moe.expert_dim(h)  # latent MoE: tokens travel latent-wide
        msg = tokens / lay.ep * moe.experts_per_token * d * (lay.ep - 1) / lay.ep
        ops.append(CommOp("MoE dispatch", "all-to-all", "EP", lay.ep, 1, msg, layers=n_moe))
        ops.append(CommOp("MoE combine", "all-to-all", "EP", lay.ep, 1, msg, layers=n_moe))
    if lay.dp > 1 and moe is not None:
        # DP attention: FFN layers not served by the all-to-all gather the dp groups' hidden
        # states before them and reduce-scatter them after (then all-reduce over TP)
        ffn = sum(1 for i in stage if model.ffn_kind(i) != "none")
        gathered = ffn - n_moe if a2a else ffn
        if gathered:
            g = lay.dp
            msg = tokens * h  # the gathered tensor: all the stage's tokens
            ops.append(
                CommOp("FFN in (DP-attn)", "all-gather", "DP-attn", g, 1, msg, layers=gathered)
            )
            ops.append(
                CommOp("FFN out (DP-attn)", "reduce-scatter", "DP-attn", g, 1, msg, layers=gathered)
            )
    return ops


def _cp_ops(model: ModelSpec, lay: Layout, tokens: int, stage: range) -> list[CommOp]:
    """CP ring attention: each rank passes its K,V block (T/cp tokens) cp-1 times per layer."""
    if lay.cp == 1:
        return []
    full = model.kv_elems_per_token_layer("full")
    kv_ranks = 1 if model.mla is not None else min(lay.tp, model.num_kv_heads)
    per_gpu_width = full / kv_ranks  # KV elements per token held by one TP rank
    layers = sum(1 for i in stage if model.layer_types[i] not in ("linear", "none"))
    msg = tokens / (lay.dp * lay.cp) * per_gpu_width
    return [CommOp("K,V block pass", "ring", "CP", lay.cp, lay.cp - 1, msg, layers=layers)]


def comm_table(
    model: ModelSpec,
    layout: Layout,
    tokens: int,
    dtype_bytes: float = 2,
    gpus_per_node: int = 8,
) -> list[CommOp]:
    """Every transfer one forward step of `tokens` tokens makes under `layout` (bytes per GPU);
    `gpus_per_node` decides whether EP is wide (all-to-all kernels, see wide_ep)."""
    lay = layout
    a2a = model.moe is not None and wide_ep(lay, gpus_per_node, model.moe.experts_per_token)
    # one GPU runs only its pipeline stage's layers: count those of the first stage, the
    # one with the most layers, ceil(L / pp) (pp_stage_layers' split)
    stage = range(stage_layers(model.num_layers, lay.pp))
    with_ffn = sum(1 for i in stage if model.ffn_kind(i) != "none")
    # the TP all-reduce after the FFN: every FFN layer but the MoE ones an all-to-all serves
    ffn_tp_layers = with_ffn - (sum(model.is_moe_layer(i) for i in stage) if a2a else 0)
    t_local = tokens / (lay.dp * lay.cp)  # tokens held by one TP group
    ops = _tp_ops(model, lay, t_local, ffn_tp_layers, stage)
    ops += _moe_ops(model, lay, tokens, a2a, stage)
    ops += _cp_ops(model, lay, tokens, stage)
    if lay.pp > 1:
        # a stage's GPU sends the step's activations tokens*hidden across its one outgoing
        # boundary once per step (in m micro-batches of tokens/m); the pp-1 boundaries are
        # different GPUs' sends, not one GPU's (with Megatron's scatter/gather each TP rank
        # sends 1/TP of it)
        act = float(tokens * model.hidden_size)
        ops.append(CommOp("stage boundary", "p2p", "PP", 2, 1, act, scope="step"))
    # sizes above are in elements; x dtype_bytes gives bytes
    out = [replace(op, bytes_per_call=op.bytes_per_call * dtype_bytes) for op in ops]
    return [op for op in out if op.calls_per_step > 0]


def stage_layers(num_layers: int, pp: int) -> int:
    """Layers on one GPU of the first (largest) pipeline stage: ceil(L / pp)."""
    return -(-num_layers // max(pp, 1))


def comm_totals(ops: list[CommOp], tokens: int, num_layers: int) -> dict[str, float]:
    """Bytes each GPU sends (wire bytes) per step, per token and per token per layer, overall
    and per collective."""
    total = sum(op.wire_bytes_per_step for op in ops)
    out: dict[str, float] = {
        "bytes_per_step": total,
        "bytes_per_token": total / max(tokens, 1),
        "bytes_per_token_layer": total / max(tokens, 1) / max(num_layers, 1),
    }
    for c in COLLECTIVES:
        out[f"{c}_bytes_per_step"] = sum(op.wire_bytes_per_step for op in ops if op.collective == c)
    return out
