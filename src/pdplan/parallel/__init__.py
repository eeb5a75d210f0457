"""L1 parallel strategies: TP/PP/EP/SP/CP layouts, validity rules, communication volumes."""

from pdplan.parallel.checks import (
    CP_MIN_CONTEXT,
    LayoutCheck,
    check_layout,
    pp_bubble,
    pp_stage_layers,
    require_valid,
)
from pdplan.parallel.comm import CommOp, comm_table, comm_totals
from pdplan.parallel.layout import Layout
from pdplan.parallel.search import (
    SeedPick,
    check_gpu_count,
    enumerate_layouts,
    max_layout_gpus,
    seed_rule,
)

__all__ = [
    "CP_MIN_CONTEXT",
    "CommOp",
    "Layout",
    "LayoutCheck",
    "SeedPick",
    "check_gpu_count",
    "check_layout",
    "comm_table",
    "comm_totals",
    "enumerate_layouts",
    "max_layout_gpus",
    "pp_bubble",
    "pp_stage_layers",
    "require_valid",
    "seed_rule",
]
