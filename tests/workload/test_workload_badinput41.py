"""Workload layer, pass 41: a length spec, duration or rate curve written with digits other
than ASCII 0-9 (full-width '１', Arabic-Indic '٢') is refused, not read as the number, and an
'empirical:' without its file says to name one."""

from __future__ import annotations

import pytest

from pdplan.errors import InputError
from pdplan.workload import parse_duration, parse_length_spec
from pdplan.workload.curves import parse_rate_curve


@pytest.mark.parametrize("text", ["５", "fixed:５１２", "uniform:１:٢٠", "lognormal:100:０.5"])
def test_a_length_spec_in_other_digits_is_refused(text: str) -> None:
    with pytest.raises(InputError) as e:
        parse_length_spec(text)
    assert str(e.value).startswith(f"bad length spec {text!r}: ") and "ASCII digit" in str(e.value)


def test_an_empirical_file_name_may_hold_any_characters() -> None:
    # the path is a file name, not a number: not refused for its digits here
    with pytest.raises(InputError) as e:
        parse_length_spec("empirical:trace４.csv")
    assert "ASCII digit" not in str(e.value)


@pytest.mark.parametrize("text", ["１h", "9０s", "٣٠m"])
def test_a_duration_in_other_digits_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"^bad duration .*: .* not (an )?ASCII digit"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["diurnal:２4h", "diurnal:24h:０.5", "points:0=1,1h=３"])
def test_a_rate_curve_in_other_digits_is_refused(text: str) -> None:
    with pytest.raises(InputError) as e:
        parse_rate_curve(text)
    assert str(e.value).startswith(f"--curve {text!r}: ") and "ASCII digit" in str(e.value)


def test_ascii_specs_still_read() -> None:
    assert parse_length_spec("uniform:1:20").b == 20
    assert parse_duration("90s") == 90.0
    assert parse_rate_curve("diurnal:24h:0.5") is not None


def test_an_empirical_spec_without_a_file_says_to_name_one() -> None:
    # it said 'numbers expected after the kind', as if empirical took numbers
    with pytest.raises(InputError) as e:
        parse_length_spec("empirical:")
    assert str(e.value) == "bad length spec 'empirical:': name the trace after it: empirical:FILE"
