"""Speculative decoding of a measured row: its own `spec_decode` column, or the InferenceMAX
recipe whose launch its source note identifies; and the cost model that prices it."""

from __future__ import annotations

import re

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.model_spec import ModelSpec
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.efficiency import Efficiency
from pdplan.perf.measured import MeasuredRow
from pdplan.perf.spec_decode import SpecCostModel, SpecDecode, parse_spec
from pdplan.plan.row_setup import is_inferencemax, kv_dtype_for

__all__ = ["draft_layers", "image_tag", "measured_date", "row_cost_model", "row_spec"]


def image_tag(row: MeasuredRow) -> str:
    """The container image tag in the row's source note ('image=...:TAG', or a db-dump note's
    trailing 'repo:TAG'), '' if none."""
    m = re.search(r"image=\S+:([\w.-]+)", row.source)
    if m:
        return m.group(1)
    last = row.source.rsplit(";", 1)[-1].strip()
    m = re.fullmatch(r"[\w.#/-]+:([\w.-]+)", last)
    return m.group(1) if m else ""


def measured_date(row: MeasuredRow) -> str:
    """'YYYY-MM-DD' of the row's measured= note, '' if none."""
    m = re.search(r"measured=(\d{4}-\d\d-\d\d)", row.source)
    return m.group(1) if m else ""


def _family(row: MeasuredRow) -> str:
    name = row.model_path.lower()
    if "deepseek-r1" in name or "deepseek-v3" in name:
        return "deepseek"
    return "qwen3.5" if "qwen3.5" in name else ""


def _inferencemax_spec(row: MeasuredRow) -> SpecDecode | None:
    """The InferenceMAX (InferenceX .github/configs/nvidia-master.yaml, 2025-12..2026-04)
    recipes that decode speculatively, as far as a row's recorded fields tell them apart:
    - dsr1-fp4/fp8-b200-trt-mtp: TensorRT-LLM release 1.2.0rc6.post3 (the plain recipes stayed
      on rc6.post2), and the 1.1.0rc2.post2 sweeps of 2026 (the plain sweep ran 2025-12-15, the
      MTP recipes came with PR #392 for the 2026-01-14 one): num_nextn_predict_layers 3, or
      1 with attention DP.
    - qwen3.5-fp8-b200-sglang-mtp (and its B300 copy): SGLang v0.5.9-cu130 at TP4 / EP1,
      EAGLE on the model's MTP layer, --speculative-num-steps 3 (the plain recipes ran the
      -amd64 images at TP4 / EP4 and TP8).
    - dsr1-fp8-b200-sglang-mtp: SGLang v0.5.9-cu130 at TP8, EAGLE on the MTP layer with
      --speculative-num-steps 2; it shares image, date and layout with its plain recipe, whose
      search space stops at 64 clients (1k / 1k, 1k / 8k) and 4 (8k / 1k at TP8), so only the
      points past those are its; the rest read as plain decoding."""
    if not is_inferencemax(row) or row.layout is None:
        return None
    tag, fam, lay = image_tag(row), _family(row), row.layout
    if row.backend == "trtllm" and fam == "deepseek" and row.system.startswith("b200"):
        mtp_2026 = tag == "1.1.0rc2.post2" and measured_date(row) >= "2026-01-01"
        if tag == "1.2.0rc6.post3" or mtp_2026:
            return SpecDecode("mtp", 1 if lay.dp > 1 else 3)
    if _sglang_dsr1_mtp(row, tag, fam, lay):
        return SpecDecode("mtp", 2)
    if (
        row.backend == "sglang"
        and fam == "qwen3.5"
        and tag == "v0.5.9-cu130"
        and (lay.tp, lay.ep, lay.dp) == (4, 1, 1)
    ):
        return SpecDecode("mtp", 3)
    return None


def _sglang_dsr1_mtp(row: MeasuredRow, tag: str, fam: str, lay: Layout) -> bool:
    """A dsr1-fp8-b200-sglang-mtp point outside its plain twin's search space."""
    if not (row.backend == "sglang" and fam == "deepseek" and row.system.startswith("b200")):
        return False
    if row.weight_dtype != "fp8" or tag != "v0.5.9-cu130" or lay.tp != 8 or lay.dp > 1:
        return False
    c = row.concurrency or 0
    return (
        c >= 128
        if (row.isl, row.osl) in ((1024, 1024), (1024, 8192))
        else ((row.isl, row.osl) == (8192, 1024) and c >= 8)
    )


def row_spec(row: MeasuredRow) -> SpecDecode | None:
    """The row's speculative decoding: its spec_decode column ('none' included), else the
    InferenceMAX recipe's."""
    if row.spec_decode:
        return parse_spec(row.spec_decode)
    return _inferencemax_spec(row)


def row_cost_model(
    row: MeasuredRow, model: ModelSpec, gpu: GPUSpec, layout: Layout, eff: Efficiency | None = None
) -> CostModel:
    """The step-time model of the row's engine on `layout`: speculative when the row was."""
    args = (model, gpu, layout, row.backend, row.weight_dtype, kv_dtype_for(row))
    spec = row_spec(row)
    if spec is None:
        return CostModel(*args, moe_dtype=row.moe_dtype, eff=eff)
    return SpecCostModel(*args, moe_dtype=row.moe_dtype, eff=eff, spec=spec)


def draft_layers(cm: CostModel) -> int:
    """Layers of the draft head `cm` runs (0 without speculative decoding): their weights and
    KV join the memory plan."""
    spec = getattr(cm, "spec", None)
    return 0 if spec is None else int(spec.draft_layers)
