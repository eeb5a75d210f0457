"""How a measured row's launch sized its KV pool: recipe fraction, engine default, or raised."""

from __future__ import annotations

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.memory import engine_kv_memory, plan_memory
from pdplan.plan.row_setup import kv_dtype_for, recipe_mem_fraction
from pdplan.plan.row_spec import draft_layers

__all__ = ["RAISED_MEM_FRACTION", "row_kv_memory"]

# A measured launch whose engine default leaves no KV pool for one request ran with a raised
# fraction (SGLang's default is 0.82-0.86 on 80-180 GB parts, perf.sglang_memory): 0.95, as
# InferenceMAX's SGLang DeepSeek-R1 FP8 TP4 recipe passes for exactly that reason (row_setup).
RAISED_MEM_FRACTION = 0.95


def row_kv_memory(row: MeasuredRow, gpu: GPUSpec, lay: Layout, cm: CostModel) -> tuple[float, bool]:
    """(mem_fraction, of_free) the row's launch sizes its KV pool with on `lay`: its recipe's
    --mem-fraction-static where known, else its engine's default (SGLang's depends on the GPU
    and the launch)."""
    frac = recipe_mem_fraction(row)
    if frac is not None:
        return frac, False
    drafts = draft_layers(cm)
    frac, of_free = engine_kv_memory(row.backend, gpu, lay, chunk_tokens=cm.eff.prefill_chunk,
                                     speculative=bool(drafts))  # fmt: skip
    if of_free or frac >= RAISED_MEM_FRACTION:
        return frac, of_free
    mem = plan_memory(cm.model, gpu, lay, row.weight_dtype, kv_dtype_for(row), check=False,
                      moe_dtype=row.moe_dtype, mem_fraction=frac, draft_layers=drafts)  # fmt: skip
    if mem.sequences_held(row.isl + row.osl) < 1:  # the row ran, so its launch fit: it must
        return RAISED_MEM_FRACTION, False  # have raised --mem-fraction-static past the default
    return frac, of_free
