"""Live metrics: vLLM / SGLang Prometheus expositions -> length and latency histograms."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import numpy as np

from pdplan.errors import InputError
from pdplan.workload.core import Workload

__all__ = [
    "ENGINE_HISTOGRAMS",
    "MetricHistogram",
    "MetricsSnapshot",
    "metrics_delta",
    "metrics_summary",
    "metrics_workload",
    "parse_metrics",
    "read_metrics",
]

# our name -> engine metric names, first match wins. Sources: vLLM vllm/engine/metrics.py and
# vllm/v1/metrics/loggers.py; SGLang python/sglang/srt/metrics/collector.py (token histograms
# need `--collect-tokens-histogram`).
ENGINE_HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "prompt_tokens": ("vllm:request_prompt_tokens", "sglang:prompt_tokens_histogram"),
    "generation_tokens": ("vllm:request_generation_tokens", "sglang:generation_tokens_histogram"),
    "e2e_latency_s": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
    "ttft_s": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl_s": (
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
        "sglang:inter_token_latency_seconds",
        "sglang:time_per_output_token_seconds",
    ),
    "queue_s": ("vllm:request_queue_time_seconds", "sglang:queue_time_seconds"),
}
ENGINE_COUNTERS: dict[str, tuple[str, ...]] = {
    "prompt_tokens_total": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"),
    "generation_tokens_total": ("vllm:generation_tokens_total", "sglang:generation_tokens_total"),
    "requests_total": ("vllm:request_success_total", "sglang:num_requests_total"),
}
_MAX_SAMPLES = 1_000_000  # cap on requests rebuilt from a histogram


@dataclass(frozen=True, eq=False)
class MetricHistogram:
    """One Prometheus histogram, summed over label sets: cumulative counts per upper bound."""

    name: str
    upper: np.ndarray  # bucket upper bounds `le`, ascending, last is +inf
    cumulative: np.ndarray  # observations <= upper[k]
    total: float  # _count
    sum: float  # _sum

    @property
    def counts(self) -> np.ndarray:
        """Observations per bucket (lower[k], upper[k]]."""
        return np.diff(self.cumulative, prepend=0.0)

    @property
    def lower(self) -> np.ndarray:
        return np.concatenate([[min(0.0, float(self.upper[0]))], self.upper[:-1]])

    def quantile(self, q: float) -> float:
        """Prometheus histogram_quantile: linear inside the bucket that holds rank q*count."""
        if self.total <= 0:
            return float("nan")
        rank = q * float(self.cumulative[-1])
        k = int(np.searchsorted(self.cumulative, rank, side="left"))
        k = min(k, len(self.upper) - 1)
        if not np.isfinite(self.upper[k]):
            return float(self.upper[k - 1]) if k > 0 else float("nan")
        lo, below = float(self.lower[k]), float(self.cumulative[k - 1]) if k else 0.0
        inside = float(self.counts[k])
        frac = (rank - below) / inside if inside > 0 else 1.0
        return lo + (float(self.upper[k]) - lo) * frac


@dataclass(frozen=True, eq=False)
class MetricsSnapshot:
    """One scrape: histograms and counter/gauge sums by metric name, plus when and where."""

    source: str
    fetched_at: float
    histograms: dict[str, MetricHistogram]
    values: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def find(self, ours: str) -> MetricHistogram | None:
        """The engine histogram for one of our names ('prompt_tokens', 'ttft_s', ...)."""
        for name in ENGINE_HISTOGRAMS.get(ours, (ours,)):
            if name in self.histograms:
                return self.histograms[name]
        return None

    @property
    def engine(self) -> str:
        names = list(self.histograms) + list(self.values)
        for eng in ("vllm", "sglang"):
            if any(n.startswith(eng + ":") for n in names):
                return eng
        return "unknown"


def read_metrics(source: str, timeout_s: float = 10.0) -> MetricsSnapshot:
    """Fetch a Prometheus text exposition from http(s)://... or read it from a file."""
    if source.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(source, timeout=timeout_s) as resp:
                raw = resp.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InputError(f"cannot fetch metrics: {exc}", path=source) from None
    else:
        from pdplan.workload.formats import open_binary

        try:
            with open_binary(source) as f:
                raw = f.read()
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read metrics: {exc}", path=source) from None
    return parse_metrics(raw.decode("utf-8", errors="replace"), source)


def parse_metrics(text: str, source: str = "<text>") -> MetricsSnapshot:
    """Parse with prometheus_client's parser; group _bucket/_count/_sum samples by metric."""
    from prometheus_client.parser import text_string_to_metric_families

    buckets: dict[str, dict[float, float]] = {}
    values: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name.endswith("_bucket") and "le" in s.labels:
                    le = float(s.labels["le"])
                    b = buckets.setdefault(s.name[: -len("_bucket")], {})
                    b[le] = b.get(le, 0.0) + float(s.value)
                elif not s.name.endswith("_created"):
                    values[s.name] = values.get(s.name, 0.0) + float(s.value)
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise InputError(f"not a Prometheus text exposition: {exc}", path=source) from None
    if not buckets and not values:
        raise InputError("no metrics found", path=source)
    hists = {name: _histogram(name, b, values) for name, b in buckets.items()}
    return MetricsSnapshot(source, time.time(), hists, values)


def _histogram(name: str, by_le: dict[float, float], values: dict[str, float]) -> MetricHistogram:
    upper = np.array(sorted(by_le), dtype=np.float64)
    cum = np.maximum.accumulate(np.array([by_le[u] for u in upper], dtype=np.float64))
    if not np.isinf(upper[-1]):  # exposition without +Inf: close it with the count
        upper = np.append(upper, np.inf)
        cum = np.append(cum, max(values.get(name + "_count", cum[-1]), cum[-1]))
    total = values.get(name + "_count", float(cum[-1]))
    return MetricHistogram(name, upper, cum, total, values.get(name + "_sum", float("nan")))


def metrics_delta(before: MetricsSnapshot, after: MetricsSnapshot) -> MetricsSnapshot:
    """What happened between two scrapes (counters reset -> InputError): a window of traffic."""
    hists = {}
    for name, h in after.histograms.items():
        old = before.histograms.get(name)
        if old is None or len(old.upper) != len(h.upper) or not np.all(old.upper == h.upper):
            continue
        cum = h.cumulative - old.cumulative
        if np.any(cum < 0):
            raise InputError(f"{name} went down between scrapes (engine restarted?)")
        hists[name] = MetricHistogram(name, h.upper, cum, h.total - old.total, h.sum - old.sum)
    vals = {k: v - before.values.get(k, 0.0) for k, v in after.values.items()}
    vals["window_s"] = after.fetched_at - before.fetched_at
    return MetricsSnapshot(after.source, after.fetched_at, hists, vals)


def _spread(h: MetricHistogram, n: int, open_top: float) -> np.ndarray:
    """n integer lengths laid out inside the buckets in proportion to their counts, so the
    bucket counts are reproduced exactly when n equals the observed count."""
    counts = h.counts
    share = counts * (n / counts.sum())
    per = np.floor(share).astype(np.int64)
    rest = n - int(per.sum())  # largest remainder rounding
    if rest > 0:
        per[np.argsort(-(share - per), kind="stable")[:rest]] += 1
    lo, hi = h.lower.copy(), h.upper.copy()
    hi[~np.isfinite(hi)] = np.maximum(lo[~np.isfinite(hi)] * open_top, lo[~np.isfinite(hi)] + 1)
    parts = []
    for k in np.flatnonzero(per):
        j = (np.arange(per[k]) + 0.5) / per[k]
        parts.append(np.ceil(lo[k] + (hi[k] - lo[k]) * j))  # inside (lo, hi]
    return np.maximum(np.concatenate(parts), 0).astype(np.int64)


def metrics_workload(snap: MetricsSnapshot, n: int | None = None, seed: int = 0) -> Workload:
    """Requests rebuilt from the prompt/generation token histograms (no times; the pairing
    of input and output is unknown, so they are shuffled independently with `seed`)."""
    hin, hout = snap.find("prompt_tokens"), snap.find("generation_tokens")
    if hin is None or hout is None or hin.cumulative[-1] <= 0 or hout.cumulative[-1] <= 0:
        raise InputError(
            "no prompt/generation token histograms with observations "
            "(vllm:request_prompt_tokens / sglang:prompt_tokens_histogram)",
            path=snap.source,
        )
    count = int(n or min(int(hin.cumulative[-1]), _MAX_SAMPLES))
    rng = np.random.default_rng(seed)
    inp = rng.permutation(_spread(hin, count, 2.0))
    out = rng.permutation(_spread(hout, count, 2.0))
    meta = {
        "source": snap.source,
        "format": f"prometheus ({snap.engine})",
        "rows": count,
        "skipped_total": 0,
        "skipped": {},
        "warnings": ["lengths rebuilt from histogram buckets; input/output pairing unknown"],
        "open_top_bucket": {"input": float(hin.counts[-1]), "output": float(hout.counts[-1])},
    }
    return Workload(inp, out, meta=meta)


def metrics_summary(snap: MetricsSnapshot) -> dict[str, object]:
    """JSON-able view: per known histogram count, mean, p50/p90/p99 and the buckets."""
    out: dict[str, object] = {"source": snap.source, "engine": snap.engine}
    for ours in ENGINE_HISTOGRAMS:
        h = snap.find(ours)
        if h is None:
            continue
        out[ours] = {
            "metric": h.name,
            "count": h.total,
            "mean": h.sum / h.total if h.total else None,
            "p50": h.quantile(0.5),
            "p90": h.quantile(0.9),
            "p99": h.quantile(0.99),
            "buckets": [[float(u), float(c)] for u, c in zip(h.upper, h.counts, strict=True)],
        }
    for ours, names in ENGINE_COUNTERS.items():
        val = next((snap.values[n] for n in names if n in snap.values), None)
        if val is not None:
            out[ours] = val
    if len(out) == 2:  # only source and engine: nothing this reads was in the text
        looked = ", ".join(names[0] for names in ENGINE_HISTOGRAMS.values())
        raise InputError(
            f"no request-length, latency or counter metrics pdplan reads (looked for {looked}, "
            "their sglang: names, ...): is this an engine's /metrics dump?",
            path=snap.source,
        )
    return out
