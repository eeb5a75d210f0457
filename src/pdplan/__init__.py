"""pdplan: plan LLM serving deployments (parallel layout, PD disaggregation, xPyD ratio)."""

from __future__ import annotations

from pdplan.errors import ConfigError, DoesNotFitError, InputError, PdplanError

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DoesNotFitError",
    "InputError",
    "PdplanError",
    "__version__",
]
