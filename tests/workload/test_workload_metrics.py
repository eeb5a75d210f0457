"""Live metrics: a real prometheus_client HTTP endpoint on 127.0.0.1 with vLLM/SGLang names."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    start_http_server,
)

from pdplan.errors import InputError
from pdplan.workload import (
    metrics_delta,
    metrics_summary,
    metrics_workload,
    parse_metrics,
    read_metrics,
)
from pdplan.workload.readers import read_workload

# vLLM build_1_2_5_buckets(max_model_len=8192) for request_prompt/generation_tokens
VLLM_TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
VLLM_E2E_BUCKETS = [
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
]
PROMPTS = [3, 7, 7, 15, 90, 150, 150, 400, 700, 1500, 4000, 9000]
OUTPUTS = [1, 2, 30, 30, 60, 120, 120, 250, 250, 250, 900, 1000]


def _vllm_registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    hp = Histogram(
        "vllm:request_prompt_tokens", "prompt", labels, registry=reg, buckets=VLLM_TOKEN_BUCKETS
    )
    hg = Histogram(
        "vllm:request_generation_tokens", "gen", labels, registry=reg, buckets=VLLM_TOKEN_BUCKETS
    )
    he = Histogram(
        "vllm:e2e_request_latency_seconds", "e2e", labels, registry=reg, buckets=VLLM_E2E_BUCKETS
    )
    c = Counter("vllm:prompt_tokens", "prompt tokens", labels, registry=reg)
    for p, o in zip(PROMPTS, OUTPUTS, strict=True):
        hp.labels("m", "0").observe(p)
        hg.labels("m", "0").observe(o)
        he.labels("m", "0").observe(o * 0.01)
        c.labels("m", "0").inc(p)
    return reg


@pytest.fixture
def endpoint() -> Iterator[tuple[str, CollectorRegistry]]:
    reg = _vllm_registry()
    server, thread = start_http_server(0, addr="127.0.0.1", registry=reg)
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics", reg
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _expected_counts(values: list[int], bounds: list[float]) -> list[int]:
    edges = [*bounds, np.inf]
    counts = [0] * len(edges)
    for v in values:
        counts[next(k for k, u in enumerate(edges) if v <= u)] += 1
    return counts


def test_endpoint_reproduces_observed_histogram(endpoint: tuple[str, CollectorRegistry]) -> None:
    url, _ = endpoint
    snap = read_metrics(url)
    assert snap.engine == "vllm"
    h = snap.find("prompt_tokens")
    assert h is not None
    # hand count: <=5: 3; <=10: 7,7; <=20: 15; <=100: 90; <=200: 150,150; <=500: 400; <=1000: 700;
    # <=2000: 1500; <=5000: 4000; +Inf: 9000
    assert h.counts.tolist() == [0, 0, 1, 2, 1, 0, 1, 2, 1, 1, 1, 1, 1]
    assert h.counts.tolist() == _expected_counts(PROMPTS, VLLM_TOKEN_BUCKETS)
    assert h.total == 12 and h.sum == sum(PROMPTS)
    summary = metrics_summary(snap)
    assert summary["prompt_tokens_total"] == sum(PROMPTS)
    assert summary["e2e_latency_s"]["count"] == 12  # type: ignore[index]
    # rebuilt requests land in the same buckets, so the histogram is reproduced exactly
    w = read_workload(url)
    assert len(w) == 12 and not w.has_times
    assert _expected_counts(sorted(w.input_len.tolist()), VLLM_TOKEN_BUCKETS) == h.counts.tolist()
    g = snap.find("generation_tokens")
    assert g is not None
    assert _expected_counts(w.output_len.tolist(), VLLM_TOKEN_BUCKETS) == g.counts.tolist()


def test_quantile_like_histogram_quantile() -> None:
    reg = CollectorRegistry()
    h = Histogram("sglang:prompt_tokens_histogram", "p", registry=reg, buckets=[100, 300, 500])
    for v in (50, 150, 250, 350):
        h.observe(v)
    snap = parse_metrics(generate_latest(reg).decode())
    hist = snap.find("prompt_tokens")
    assert hist is not None and snap.engine == "sglang"
    # rank 0.5*4 = 2 falls in (100, 300] holding 2 obs, 1 below: 100 + 200 * (2-1)/2 = 200
    assert hist.quantile(0.5) == pytest.approx(200.0)


def test_delta_between_scrapes() -> None:
    reg = _vllm_registry()
    before = parse_metrics(generate_latest(reg).decode())
    hp = reg._names_to_collectors["vllm:request_prompt_tokens"]  # type: ignore[attr-defined]
    hp.labels("m", "0").observe(42)
    after = parse_metrics(generate_latest(reg).decode())
    d = metrics_delta(before, after)
    h = d.find("prompt_tokens")
    assert h is not None and h.total == 1 and h.counts.tolist()[5] == 1  # 42 in (20, 50]
    with pytest.raises(InputError, match="went down"):
        metrics_delta(after, before)


def test_bad_metrics_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError):
        parse_metrics("this is { not metrics")
    with pytest.raises(InputError):
        read_metrics("http://127.0.0.1:1/metrics", timeout_s=2)
    snap = parse_metrics("# TYPE up gauge\nup 1\n")
    with pytest.raises(InputError, match="no prompt/generation"):
        metrics_workload(snap)
