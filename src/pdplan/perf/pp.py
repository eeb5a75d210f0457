"""Pipeline parallelism: the shape of the one micro-batch that paces a step."""

from __future__ import annotations

from pdplan.perf.step import BatchShape

__all__ = ["pp_micro_shape"]


def pp_micro_shape(shape: BatchShape, pp: int) -> BatchShape:
    """The batch is split into m = min(pp, sequences) micro-batches
    kept in flight together, so one iteration (every sequence advances once) takes
    max(m, pp) stage-times of one micro-batch = the time of one micro-batch through all
    layers (pp stages x L/pp layers). Micro-batches hold whole sequences: a prompt chunk is
    never split across them (nor are a long prompt's chunks overlapped: vLLM V1 does not
    reschedule a request while its chunk is in flight), so with fewer prompts than
    micro-batches the busiest one carries a whole prompt and a lone prompt's latency is
    its full-depth time, as without PP; only >= m prompts spread as ceil(T / m) tokens."""
    seqs, p = shape.prefill_seqs + shape.decode_seqs, shape.prefill_seqs
    m = min(pp, max(1, seqs))
    if m <= 1:
        return shape
    parts = m if p >= m or p == 0 else p  # prompt work divides by m, or one prompt each
    return BatchShape(
        -(-shape.prefill_tokens // parts),
        shape.prefill_pairs / parts,
        -(-p // m),
        -(-shape.decode_seqs // m),
        shape.decode_ctx // m,
    )
