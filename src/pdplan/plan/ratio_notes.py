"""Explanation lines of `pdplan ratio` about how the prefill rate P was found."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.prefill_rate import LoadedPrefill
    from pdplan.plan.ratio import ModelRatio

__all__ = ["packing_note"]


def packing_note(res: ModelRatio, lp: LoadedPrefill, cm: CostModel) -> str:
    """Why P is a loaded instance's (H4/H5): prompts packed to the token budget, or a prompt
    longer than the budget chunked over several iterations; pp batches in flight."""
    pp, budget, chunk = cm.layout.pp, cm.step_token_budget, cm.prompt_token_budget
    flight = f"; {pp} such batches in flight, one per pipeline stage" if pp > 1 else ""
    if lp.isl <= chunk:
        many = "s" if lp.per_batch > 1 else ""
        how = (
            f"packs waiting prompts into each {budget}-token batch (the engine's token "
            f"budget holds {lp.per_batch} prompt{many} of {lp.isl} tokens{flight})"
        )
    else:
        side = f", {lp.per_batch} prompts side by side" if lp.per_batch > 1 else ""
        how = (
            f"prefills a {lp.isl}-token prompt in chunks: it spans {-(-lp.isl // chunk)} "
            f"iterations of the engine's {chunk}-token budget (chunked prefill{side}{flight})"
        )
    shared = (
        "sharing each step's weights read"
        if lp.prompts > 1
        else "one prompt at a time, so no step's weights read is shared"
    )
    mean = "E[p(I)] = " if res.lengths is not None else ""
    alone = res.prefill_s if res.prefill_alone_s is None else res.prefill_alone_s
    return (
        f"P at load: a busy {cm.layout} prefill instance {how}, {shared}: {mean}"
        f"{res.prefill_s * 1e3:.1f} ms of instance time per prompt vs "
        f"{alone * 1e3:.1f} ms for a prompt prefilled alone"
    )
