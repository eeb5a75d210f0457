"""pdplan: plan LLM serving deployments (parallel layout, PD disaggregation, xPyD ratio)."""

from __future__ import annotations

import importlib
from typing import Any

from pdplan.errors import ConfigError, DoesNotFitError, InputError, PdplanError

__version__ = "0.1.0"

# public name -> module that defines it; imported on first use so `import pdplan` stays cheap
_LAZY = {
    "get_model": "pdplan.catalog",
    "get_gpu": "pdplan.catalog",
    "load_gpu_file": "pdplan.catalog",
    "ModelSpec": "pdplan.catalog",
    "GPUSpec": "pdplan.catalog",
    "Layout": "pdplan.parallel.layout",
    "check_layout": "pdplan.parallel",
    "enumerate_layouts": "pdplan.parallel",
    "CostModel": "pdplan.perf.costmodel",
    "BatchShape": "pdplan.perf.step",
    "plan_memory": "pdplan.perf.memory",
    "kv_transfer": "pdplan.perf.kv_transfer",
    "estimate_agg": "pdplan.perf.estimate",
    "estimate_disagg": "pdplan.perf.estimate",
    "estimate_deployment": "pdplan.plan.steady",
    "ratio_from_numbers": "pdplan.plan.ratio",
    "ratio_from_model": "pdplan.plan.ratio",
    "Workload": "pdplan.workload",
    "read_workload": "pdplan.workload",
    "synthesize": "pdplan.workload",
    "workload_stats": "pdplan.workload",
    "simulate": "pdplan.sim",
    "simulate_closed_loop": "pdplan.sim",
    "SimConfig": "pdplan.sim",
    "InstanceSpec": "pdplan.sim",
    "Arrivals": "pdplan.sim",
    "build_cluster": "pdplan.plan.sim_deploy",
    "simulate_deployment": "pdplan.plan.sim_deploy",
    "Cluster": "pdplan.plan.sim_deploy",
    # result types the entry points above return
    "Estimate": "pdplan.perf.estimate",
    "KVTransfer": "pdplan.perf.kv_transfer",
    "MemoryPlan": "pdplan.perf.memory",
    "LayoutCheck": "pdplan.parallel.checks",
    "RatioResult": "pdplan.plan.ratio",
    "ModelRatio": "pdplan.plan.ratio",
    "SimResult": "pdplan.sim.metrics",
}

__all__ = [
    "ConfigError",
    "DoesNotFitError",
    "InputError",
    "PdplanError",
    "__version__",
    *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pdplan' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names too, before first use (dir(), help(), tab completion)."""
    return sorted({*globals(), *__all__})
