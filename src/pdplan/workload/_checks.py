"""Workload column checks: vectorised, each refusal names the column, first bad row and value."""

from __future__ import annotations

import math

import numpy as np

from pdplan.errors import InputError
from pdplan.workload.values import INT32_MAX

__all__ = ["block_tokens", "checked_columns", "hash_columns", "take_index"]

_INTS = "iu"  # numpy dtype kinds of integer arrays (bool 'b' is not one)
_NUMBERS = "iuf"  # ... and of real-number arrays (complex, str, object, bool refused)


def checked_columns(
    input_len: object, output_len: object, arrival_s: object, session_id: object
) -> dict[str, np.ndarray | None]:
    """The per-request columns as 1-D arrays: int32 lengths, float64 arrivals, session ids."""
    inp = _lengths("input_len", input_len)
    out = _lengths("output_len", output_len)
    n = len(inp)
    if len(out) != n:
        raise InputError(f"{n} input lengths but {len(out)} output lengths")
    return {
        "input_len": inp,
        "output_len": out,
        "arrival_s": None if arrival_s is None else _arrivals(arrival_s, n),
        "session_id": None if session_id is None else _sessions(session_id, n),
    }


def _column(name: str, values: object) -> np.ndarray:
    """values as a 1-D array (one entry per row); a scalar or a 2-D array is refused."""
    try:
        a = np.asarray(values)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise InputError(f"{name} must be a 1-D array: {exc}") from None
    if a.ndim != 1:
        got = f"a scalar {values!r}" if a.ndim == 0 else f"shape {a.shape}"
        raise InputError(f"{name} must be a 1-D array, one value per request (got {got})")
    return a


def _lengths(name: str, values: object) -> np.ndarray:
    """Token counts as int32: whole numbers in [0, INT32_MAX]; whole-valued floats accepted."""
    a = _column(name, values)
    if a.dtype.kind not in _NUMBERS:
        raise InputError(f"{name} must hold numbers of tokens (got dtype {a.dtype})")
    if a.dtype == np.int32 or a.size == 0:
        ok = a.size == 0 or a.min() >= 0
    else:
        with np.errstate(invalid="ignore"):  # NaN fails the comparisons: reported below
            ok = bool(a.min() >= 0 and a.max() <= INT32_MAX)
            ok = ok and (a.dtype.kind in _INTS or bool(np.all(a == np.trunc(a))))
    if not ok:
        with np.errstate(invalid="ignore"):
            bad = ~((a >= 0) & (a <= INT32_MAX))
            if a.dtype.kind == "f":
                bad |= a != np.trunc(a)
        i = int(np.argmax(bad))
        value = a[i].item()
        raise InputError(
            f"{name}[{i}] = {value!r} {_why_length(value)}: token counts must be whole "
            f"numbers in [0, {INT32_MAX}]"
        )
    return a.astype(np.int32, copy=False)


def _why_length(value: float) -> str:
    if not math.isfinite(value):
        return "is not a finite number"
    if value < 0:
        return "is negative"
    if value > INT32_MAX:
        return "is too large (lengths are stored as int32)"
    return "is not a whole number"


def _arrivals(values: object, n: int) -> np.ndarray:
    """Arrival times as float64 seconds, finite and >= 0 (any order: take() reorders rows)."""
    a = _column("arrival_s", values)
    if len(a) != n:
        raise InputError(f"{n} requests but {len(a)} arrival times")
    if a.dtype.kind not in _NUMBERS:
        raise InputError(f"arrival_s must hold numbers of seconds (got dtype {a.dtype})")
    t = a.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore"):  # NaN fails the comparisons: reported below
        if t.size and not (t.min() >= 0 and t.max() < np.inf):
            i = int(np.argmax(~(t >= 0) | ~np.isfinite(t)))
            raise InputError(
                f"arrival_s[{i}] = {a[i].item()!r}: arrival times must be finite seconds >= 0"
            )
    return t


def _sessions(values: object, n: int) -> np.ndarray:
    """Session ids: integers, one per request."""
    a = _column("session_id", values)
    if len(a) != n:
        raise InputError(f"{n} requests but {len(a)} session ids")
    if a.dtype.kind not in _INTS:
        raise InputError(f"session_id must hold integer ids (got dtype {a.dtype})")
    return a


def block_tokens(value: object) -> int:
    """Tokens per prefix-hash block: a whole number in [1, INT32_MAX] (no bool, no float)."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok or not 1 <= value <= INT32_MAX:  # type: ignore[operator]
        raise InputError(
            f"block_tokens={value!r} must be a whole number of tokens in [1, {INT32_MAX}]"
        )
    return int(value)  # type: ignore[call-overload]


def hash_columns(
    offsets: object, ids: object, n: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """CSR prefix hashes: int64 offsets 0 = o[0] <= o[1] <= ... <= o[n] = len(ids), or None."""
    if offsets is None and ids is None:
        return None, None
    if offsets is None or ids is None:
        missing = "hash_offsets" if offsets is None else "hash_ids"
        raise InputError(f"hash_offsets and hash_ids go together: {missing} is missing")
    ids_a = _column("hash_ids", ids)
    off = _column("hash_offsets", offsets)
    if off.dtype.kind not in _INTS:
        raise InputError(f"hash_offsets must hold integer positions (got dtype {off.dtype})")
    if len(off) != n + 1:
        raise InputError(
            f"hash_offsets must have one entry per request plus one ({n + 1}), not {len(off)}"
        )
    if off[0] != 0:
        raise InputError(f"hash_offsets[0] = {off[0]} must be 0")
    down = off[1:] < off[:-1]
    if down.any():
        i = int(np.argmax(down)) + 1
        raise InputError(
            f"hash_offsets[{i}] = {off[i]} is below hash_offsets[{i - 1}] = {off[i - 1]}: "
            "offsets must not decrease"
        )
    if off[-1] != len(ids_a):
        raise InputError(
            f"hash_offsets ends at {off[-1]} but there are {len(ids_a)} hash_ids: "
            "the last offset must equal len(hash_ids)"
        )
    return off.astype(np.int64, copy=False), ids_a


def take_index(idx: object, n: int) -> np.ndarray:
    """Row positions for Workload.take as int64, each in [0, n) (no negative or bool mask)."""
    a = _column("take() index", idx)
    if a.dtype.kind == "b":
        raise InputError("take() wants row positions, not a boolean mask: use np.flatnonzero")
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind not in _INTS:
        raise InputError(f"take() wants integer row positions (got dtype {a.dtype})")
    if a.min() < 0 or a.max() >= n:
        i = int(np.argmax((a < 0) | (a >= n)))
        raise InputError(
            f"take(): index {a[i].item()} (position {i}) is out of range for a workload of "
            f"{n:,} rows (valid: 0 to {n - 1})"
        )
    return a.astype(np.int64, copy=False)
