"""A diurnal curve over part of a period warns that it does not average the given rate."""

from __future__ import annotations

from pdplan.workload.synth import synthesize


def test_partial_period_warns_and_whole_periods_do_not() -> None:
    part = synthesize(duration_s=600, rate=2.0, rate_curve="diurnal:24h")
    assert any("averages 0.50x the rate" in w for w in part.meta["warnings"])
    whole = synthesize(duration_s=2 * 86400, rate=0.01, rate_curve="diurnal:24h")
    assert not any("averages" in w for w in whole.meta["warnings"])
