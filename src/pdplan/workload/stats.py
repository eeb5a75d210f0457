"""workload_stats: counts, rate, burstiness, length percentiles, joint histogram, prefix reuse."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from pdplan.errors import InputError
from pdplan.workload.core import Workload

__all__ = ["length_summary", "log2_edges", "prefix_hits", "workload_stats"]

_MAX_WINDOWS = 100_000
_QS = (50.0, 90.0, 99.0)  # reported percentiles (numpy 'linear' interpolation)
_META_KEYS = (
    "skipped_total",
    "skipped",
    "skipped_examples",
    "warnings",
    "out_of_order",
    "blank_lines",
    "by_model",
    "by_log_type",
    "open_top_bucket",
    "time_origin",  # the first arrival of datetime timestamps (ISO, UTC)
    # ... of numeric ones: in seconds, and as read in a finer time_unit (exact integers)
    "time_origin_s",
    "time_origin_ms",
    "time_origin_us",
    "time_origin_ns",
    "clipped",
)


def length_summary(x: np.ndarray) -> dict[str, float | int | None]:
    """mean / p50 / p90 / p99 / max / total of a length column (tokens)."""
    if len(x) == 0:
        return {"mean": None, "p50": None, "p90": None, "p99": None, "max": None, "total": 0}
    p50, p90, p99 = np.percentile(x, _QS)
    return {
        "mean": float(x.mean(dtype=np.float64)),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "max": int(x.max()),
        "total": int(x.sum(dtype=np.int64)),
    }


def log2_edges(max_value: int) -> np.ndarray:
    """Bin edges 0, 1, 2, 4, ..., 2^k > max_value (bins are [lo, hi) in tokens)."""
    k = max(1, int(np.ceil(np.log2(max(int(max_value), 1) + 1))))
    return np.concatenate([[0], 2 ** np.arange(k + 1)]).astype(np.int64)


def prefix_hits(w: Workload, lru_blocks: int | None = None) -> np.ndarray | None:
    """Per hash block in arrival order: True when the block was seen before (a KV-cache hit).

    lru_blocks=None: unbounded cache (hit = not the first occurrence); else an LRU of that
    many blocks, each request touching its blocks in order.
    """
    if w.hash_ids is None or w.hash_offsets is None:
        return None
    ids = w.hash_ids
    if lru_blocks is None:
        hit = np.ones(len(ids), dtype=bool)
        hit[np.unique(ids, return_index=True)[1]] = False
        return hit
    if lru_blocks <= 0:
        raise InputError("--lru-blocks must be a positive number of blocks")
    cache: OrderedDict[int, None] = OrderedDict()
    hit = np.zeros(len(ids), dtype=bool)
    for j, h in enumerate(ids.tolist()):
        if h in cache:
            hit[j] = True
            cache.move_to_end(h)
        else:
            cache[h] = None
            if len(cache) > lru_blocks:
                cache.popitem(last=False)
    return hit


def _arrival_stats(t: np.ndarray) -> dict[str, float | None]:
    n = len(t)
    span = float(t[-1] - t[0]) if n else 0.0
    gaps = np.diff(t)
    mean_gap = float(gaps.mean()) if len(gaps) else 0.0
    return {
        "span_s": span,
        # (n - 1) gaps over the span: requests/s between the first and the last arrival
        "mean_rate_rps": (n - 1) / span if span > 0 else None,
        # burstiness: coefficient of variation of inter-arrival gaps (1 = Poisson)
        "interarrival_cv": float(gaps.std()) / mean_gap if mean_gap > 0 else None,
    }


def _joint(w: Workload) -> dict[str, object]:
    edges_in = log2_edges(int(w.input_len.max()))
    edges_out = log2_edges(int(w.output_len.max()))
    counts, _, _ = np.histogram2d(w.input_len, w.output_len, bins=(edges_in, edges_out))
    return {
        "input_edges": edges_in.tolist(),
        "output_edges": edges_out.tolist(),
        "counts": counts.astype(np.int64).tolist(),  # rows: input bins, columns: output bins
    }


def _prefix(w: Workload, hits: np.ndarray | None, lru: int | None) -> dict[str, object] | None:
    if hits is None:
        return None
    n_blocks = len(hits)
    reused = int(hits.sum())
    return {
        "blocks": n_blocks,
        "reused_blocks": reused,
        "reuse_ratio": reused / n_blocks if n_blocks else None,  # share of blocks seen before
        "lru_blocks": lru,
        "block_tokens": w.block_tokens,
    }


def _windows(w: Workload, window_s: float, hits: np.ndarray | None) -> list[dict[str, object]]:
    assert w.arrival_s is not None
    t = w.arrival_s
    n_win = max(1, int(np.floor((t[-1] - t[0]) / window_s)) + 1)
    if n_win > _MAX_WINDOWS:
        raise InputError(f"--window {window_s:g}s gives {n_win} windows; use a larger window")
    bounds = np.searchsorted(t, t[0] + window_s * np.arange(n_win + 1), side="left")
    bounds[-1] = len(t)
    block_bounds = None if hits is None or w.hash_offsets is None else w.hash_offsets[bounds]
    out = []
    for k in range(n_win):
        a, b = int(bounds[k]), int(bounds[k + 1])
        start, partial = float(t[0] + k * window_s), k == n_win - 1
        # the last window ends at the last arrival: its rate is over the time it covers
        span = float(t[-1]) - start if partial else window_s
        row: dict[str, object] = {
            "start_s": start,
            "duration_s": span,
            "requests": b - a,
            "rate_rps": (b - a) / span if span > 0 else None,
            "partial": partial,
            "input": length_summary(w.input_len[a:b]),
            "output": length_summary(w.output_len[a:b]),
        }
        if block_bounds is not None and hits is not None:
            ba, bb = int(block_bounds[k]), int(block_bounds[k + 1])
            row["reuse_ratio"] = float(hits[ba:bb].mean()) if bb > ba else None
        out.append(row)
    return out


def _lru_needs_hashes(w: Workload, lru_blocks: int | None) -> None:
    """A prefix-cache size on a trace without hash blocks would be silently ignored."""
    if lru_blocks is not None and not w.has_hashes:
        raise InputError(
            "--lru-blocks sizes the prefix cache, but this trace has no hash_ids (prefix "
            "blocks) to cache: drop it, or map the column with --map hashes=COL",
            path=str(w.meta.get("source") or "") or None,
        )


def workload_stats(
    w: Workload, window_s: float | None = None, lru_blocks: int | None = None
) -> dict[str, object]:
    """JSON-able summary of a workload; with window_s, the same per time window (drift)."""
    if len(w) == 0:
        raise InputError("the workload has no requests")
    out: dict[str, object] = {
        "source": w.meta.get("source"),
        "format": w.meta.get("format"),
        "requests": len(w),
        "has_times": w.has_times,
        "span_s": None,
        "mean_rate_rps": None,
        "interarrival_cv": None,
    }
    if w.arrival_s is not None:
        out.update(_arrival_stats(w.arrival_s))
    out["input"] = length_summary(w.input_len)
    out["output"] = length_summary(w.output_len)
    out["zero_input"] = int(np.count_nonzero(w.input_len == 0))
    out["zero_output"] = int(np.count_nonzero(w.output_len == 0))  # e.g. BurstGPT failures
    out["joint_histogram"] = _joint(w)
    _lru_needs_hashes(w, lru_blocks)
    hits = prefix_hits(w, lru_blocks)
    out["prefix"] = _prefix(w, hits, lru_blocks)
    out["sessions"] = None if w.session_id is None else len(np.unique(w.session_id))
    for key in _META_KEYS:
        if key in w.meta:
            out[key] = w.meta[key]
    if window_s is not None:
        if w.arrival_s is None:
            raise InputError("--window needs arrival times; this workload has none")
        if window_s <= 0:
            raise InputError("--window must be positive")
        out["window_s"] = window_s
        out["windows"] = _windows(w, window_s, hits)
    return out
