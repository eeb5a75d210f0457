"""Careful single-value parsing: lengths, timestamps, durations; each failure says why."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np

from pdplan._text import foreign_digits
from pdplan.errors import InputError

__all__ = [
    "INT32_MAX",
    "MAX_TIME_S",
    "TIME_TOO_LARGE",
    "TIME_UNITS",
    "BadValue",
    "number_array",
    "parse_duration",
    "parse_length",
    "parse_time_ns",
    "parse_time_value",
    "real_number",
    "whole_number",
]

INT32_MAX = 2**31 - 1  # lengths are stored as int32 (Workload.input_len / output_len)

# seconds per unit of a numeric timestamp column (Mooncake FAST'25 uses ms)
TIME_UNITS: dict[str, float] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}

# |t| above 1e12 s (~31,700 years) is no timestamp in the column's unit: epoch seconds are
# 1.7e9 today, epoch ms 1.7e12, us 1.7e15, ns 1.7e18, so it is a finer unit read as seconds.
MAX_TIME_S = 1e12  # s
TIME_TOO_LARGE = "timestamp over 1e12 s (epoch ms / us / ns? set time_unit)"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
_DURATION_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_TZ = re.compile(r"(Z|[+-]\d\d:?\d\d)$")


class BadValue(ValueError):
    """One cell that cannot be used; the message is the reason (used as a skip-count key)."""


def parse_duration(text: str) -> float:
    """'15m' -> 900.0, '1h' -> 3600.0, '90s' -> 90.0, '300' -> 300.0 (plain number = seconds)."""
    odd = foreign_digits(str(text))
    if odd:  # '\d' and float() read '１h' as an hour
        raise InputError(f"bad duration {text!r}: {odd}")
    m = _DURATION.match(str(text))
    if not m:
        raise InputError(f"bad duration {text!r}: use e.g. 90s, 15m, 1h, 1d or plain seconds")
    value = float(m.group(1)) * _DURATION_S[m.group(2) or "s"]
    if value <= 0:
        raise InputError(f"duration {text!r} must be positive")
    return value


def whole_number(name: str, value: object, low: int) -> int:
    """value as an int >= low (numpy ints too); bool, float and str refused by name."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok or value < low:  # type: ignore[operator]
        raise InputError(f"{name}={value!r} must be a whole number >= {low} (an int, not a bool)")
    return int(value)  # type: ignore[call-overload]


def real_number(name: str, value: object) -> float:
    """value as a float (ints and numpy reals too); bool, complex and str refused by name.
    NaN and inf pass: the caller says which range it wants."""
    odd = isinstance(value, (bool, np.bool_, np.complexfloating))
    if odd or not isinstance(value, (int, float, np.number)):
        raise InputError(f"{name}={value!r} must be a real number (got {type(value).__name__})")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int past 1.8e308: the caller's finite check names it
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def parse_length(value: object) -> int:
    """A token count: a non-negative integer (ints, integral floats, numeric strings)."""
    if isinstance(value, bool) or value is None:
        raise BadValue("missing length" if value is None else "non-numeric length")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise BadValue("non-integer length")
        n = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise BadValue("missing length")
        if odd := foreign_digits(text):  # int() reads '１0' as 10: refused, not guessed
            raise BadValue(f"length {text!r}: {odd}")
        try:
            n = int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                raise BadValue("non-numeric length") from None
            if not math.isfinite(f) or f != int(f):
                raise BadValue("non-integer length") from None
            n = int(f)
    else:
        raise BadValue("non-numeric length")
    if n < 0:
        raise BadValue("negative length")
    if n > INT32_MAX:
        raise BadValue("length too large")
    return n


def parse_time_ns(value: object, unit_s: float) -> tuple[int | None, float | None]:
    """A timestamp: numeric (in `unit_s` seconds) -> (None, seconds), or ISO datetime -> (ns, None).

    Datetimes may carry 7 fractional digits (Azure 2023) or a UTC offset (Azure 2024);
    naive datetimes are taken as UTC.
    """
    ns, num = parse_time_value(value, unit_s)
    return ns, None if num is None else float(num) * unit_s


def parse_time_value(value: object, unit_s: float) -> tuple[int | None, int | float | None]:
    """As parse_time_ns, but a number comes back in its own unit (ticks of `unit_s` seconds),
    not in seconds: an integer (a JSON int, integer text) within int64 as an int, so epoch
    us / ns (1.7e18 ns: past float64's 2**53 exact integers) stay exact until the Builder
    subtracts the first arrival; other numbers as floats."""
    if isinstance(value, bool) or value is None:
        raise BadValue("missing timestamp" if value is None else "bad timestamp")
    if isinstance(value, (int, float)):
        return None, _in_range(value, unit_s)
    if not isinstance(value, str):
        raise BadValue("bad timestamp")
    text = value.strip()
    if not text:
        raise BadValue("missing timestamp")
    if odd := foreign_digits(text):  # int() / float() read '１7' as 17: refused, not guessed
        raise BadValue(f"timestamp {text!r}: {odd}")
    num: int | float
    try:
        num = int(text)
    except ValueError:
        try:
            num = float(text)
        except ValueError:  # not a number: an ISO datetime or nothing
            return _iso_ns(text), None
    # a number past the bound is refused here: numpy would read '1700000000500' as a year
    return None, _in_range(num, unit_s)


def number_array(values: list[int | float]) -> np.ndarray:
    """Numeric times (parse_time_value's) as one array: int64 when every one is an int (kept
    exact), else float64."""
    if values and all(type(v) is int for v in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=np.float64)


def _in_range(num: int | float, unit_s: float) -> int | float:
    """num (ticks of unit_s seconds) checked finite and within MAX_TIME_S; an int past
    int64 (no column type holds it) as a float."""
    try:
        _finite_seconds(float(num) * unit_s)
    except OverflowError:  # an int past 1.8e308, read as inf before
        raise BadValue("bad timestamp") from None
    if isinstance(num, int) and not -(2**63) <= num < 2**63:
        return float(num)
    return num


def _finite_seconds(seconds: float) -> float:
    if not math.isfinite(seconds):
        raise BadValue("bad timestamp")
    if abs(seconds) > MAX_TIME_S:
        raise BadValue(TIME_TOO_LARGE)
    return seconds


def _iso_ns(text: str) -> int:
    """ISO-8601 datetime -> int64 ns since the epoch (UTC)."""
    offset_ns = 0
    m = _TZ.search(text)
    if m and len(text) > 10:
        tz = m.group(1)
        text = text[: m.start()]
        if tz != "Z":
            digits = tz[1:].replace(":", "")
            minutes = int(digits[:2]) * 60 + int(digits[2:])
            offset_ns = (1 if tz[0] == "+" else -1) * minutes * 60 * 10**9
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns on leftover zone text: reject it
            ns = int(np.datetime64(text.replace(" ", "T", 1), "ns").astype(np.int64))
    except (ValueError, OverflowError, Warning):
        raise BadValue("bad timestamp") from None
    if ns == np.iinfo(np.int64).min:  # NaT
        raise BadValue("bad timestamp")
    return ns - offset_ns
