"""L0 traffic: trace readers, length histograms, arrival processes, live metrics."""

from __future__ import annotations

from pdplan.workload.core import Workload
from pdplan.workload.formats import PRESETS, ColumnMap, parse_mapping
from pdplan.workload.metrics import (
    MetricHistogram,
    MetricsSnapshot,
    metrics_delta,
    metrics_summary,
    metrics_workload,
    parse_metrics,
    read_metrics,
)
from pdplan.workload.readers import FORMATS, READERS, read_workload, register_reader
from pdplan.workload.stats import length_summary, prefix_hits, workload_stats
from pdplan.workload.synth import (
    LengthSpec,
    RateCurve,
    parse_length_spec,
    parse_rate_curve,
    synthesize,
)
from pdplan.workload.values import parse_duration
from pdplan.workload.writers import write_workload

LengthDist = Workload  # a length distribution without times is a Workload with arrival_s=None

__all__ = [
    "FORMATS",
    "PRESETS",
    "READERS",
    "ColumnMap",
    "LengthDist",
    "LengthSpec",
    "MetricHistogram",
    "MetricsSnapshot",
    "RateCurve",
    "Workload",
    "length_summary",
    "metrics_delta",
    "metrics_summary",
    "metrics_workload",
    "parse_duration",
    "parse_length_spec",
    "parse_mapping",
    "parse_metrics",
    "parse_rate_curve",
    "prefix_hits",
    "read_metrics",
    "read_workload",
    "register_reader",
    "synthesize",
    "workload_stats",
    "write_workload",
]
