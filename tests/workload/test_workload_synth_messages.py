"""synthesize / parse_length_spec errors name only the parameter that is wrong and why."""

from __future__ import annotations

import pytest

from pdplan.errors import InputError
from pdplan.workload import parse_length_spec, synthesize


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"rate": -1.0}, "rate=-1.0 must be a finite number > 0"),
        ({"rate": float("nan")}, "rate=nan must be a finite number > 0"),
        ({"cv": float("inf")}, "cv=inf must be a finite number > 0"),
    ],
)
def test_a_bad_rate_or_cv_is_named_alone(kw: dict[str, float], message: str) -> None:
    with pytest.raises(InputError) as exc:
        synthesize(n=10, **kw)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("uniform:1:inf", "parameters must be finite numbers >= 0"),
        ("lognormal:100:nan", "parameters must be finite numbers >= 0"),
        ("uniform:5:-1", "parameters must be finite numbers >= 0"),
        ("uniform:5", "use uniform:LO:HI"),
        ("lognormal:1:2:3:4", "use lognormal:MEAN:SIGMA[:MAX]"),
    ],
)
def test_length_spec_errors_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_length_spec(text)
    assert str(exc.value) == f"bad length spec {text!r}: {message}"
