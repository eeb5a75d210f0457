"""Synthetic traffic: determinism, arrival processes, rate curves, length specs."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.errors import InputError
from pdplan.workload import parse_length_spec, synthesize, workload_stats


def test_same_seed_same_trace_other_seed_differs() -> None:
    a = synthesize(n=1000, rate=5, arrival="gamma", cv=2, input="lognormal:800:1", seed=7)
    b = synthesize(n=1000, rate=5, arrival="gamma", cv=2, input="lognormal:800:1", seed=7)
    c = synthesize(n=1000, rate=5, arrival="gamma", cv=2, input="lognormal:800:1", seed=8)
    assert a.arrival_s is not None and b.arrival_s is not None and c.arrival_s is not None
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.input_len, b.input_len)
    assert not np.array_equal(a.arrival_s, c.arrival_s)


def test_fixed_arrivals_and_lengths_exact() -> None:
    w = synthesize(n=5, rate=2.0, arrival="fixed", input="100", output="fixed:7")
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert w.input_len.tolist() == [100] * 5 and w.output_len.tolist() == [7] * 5


def test_duration_mode_fixed_rate() -> None:
    w = synthesize(duration_s="10s", rate=3.0, arrival="fixed")
    assert len(w) == 30  # t = 0, 1/3, ..., 29/3 < 10


@pytest.mark.parametrize("cv", [1.0, 3.0])
def test_gamma_burstiness_and_rate(cv: float) -> None:
    s = workload_stats(synthesize(n=200_000, rate=10.0, arrival="gamma", cv=cv, seed=1))
    assert s["mean_rate_rps"] == pytest.approx(10.0, rel=0.03)
    assert s["interarrival_cv"] == pytest.approx(cv, rel=0.05)


def test_diurnal_curve_shapes_the_rate() -> None:
    # m(t) = 1 - 0.8 cos(2 pi t / 24h): the mean over [0, 6h) is 1 - 0.8 * 2/pi = 0.4907
    w = synthesize(duration_s="24h", rate=4.0, rate_curve="diurnal:24h:0.8", seed=3)
    s = workload_stats(w, window_s=6 * 3600)
    rates = [x["rate_rps"] for x in s["windows"]]
    assert rates[0] == pytest.approx(4 * (1 - 0.8 * 2 / np.pi), rel=0.05)
    assert rates[1] == pytest.approx(4 * (1 + 0.8 * 2 / np.pi), rel=0.05)


def test_points_curve() -> None:
    # the points give the shape; --rate stays the mean: the curve's mean over 200 s is
    # (100 x 1 + 1 x 2 + 99 x 3) / 200 = 1.995, so it is scaled by 1 / 1.995
    w = synthesize(
        duration_s="200s", rate=10.0, arrival="fixed", rate_curve="points:0=1,100s=1,101s=3"
    )
    t = w.arrival_s
    assert t is not None
    low = 10.0 / 1.995  # req/s before 100 s
    assert w.meta["params"]["rate_curve_scale"] == pytest.approx(1 / 1.995)
    assert len(t) == pytest.approx(2000, abs=1)  # 10 req/s over 200 s
    assert np.count_nonzero(t < 100) == pytest.approx(100 * low, abs=1)
    assert np.count_nonzero(t >= 101) == pytest.approx(99 * 3 * low, abs=2)


def test_length_specs() -> None:
    rng = np.random.default_rng(0)
    vals, clipped = parse_length_spec("uniform:5:9").sample(10_000, rng)
    assert vals.min() == 5 and vals.max() == 9 and clipped == 0
    vals, _ = parse_length_spec("lognormal:1000:0.5").sample(200_000, rng)
    assert vals.mean() == pytest.approx(1000, rel=0.02)
    vals, clipped = parse_length_spec("lognormal:1000:1.5:2000").sample(10_000, rng)
    assert vals.max() == 2000 and clipped == np.count_nonzero(vals == 2000) > 0


@pytest.mark.parametrize("spec", ["", "gauss:1", "uniform:9:5", "fixed:0", "lognormal:10", "x:y"])
def test_bad_length_spec(spec: str) -> None:
    with pytest.raises(InputError):
        parse_length_spec(spec)


def test_bad_arguments() -> None:
    with pytest.raises(InputError):
        synthesize(rate=1.0)
    with pytest.raises(InputError):
        synthesize(n=10, duration_s=5)
    with pytest.raises(InputError):
        synthesize(n=10, arrival="weibull")
    with pytest.raises(InputError):
        synthesize(n=10, rate_curve="diurnal:24h:2")
