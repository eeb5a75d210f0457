"""Workload and synthesize refuse bad input with an InputError naming the parameter and row."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pdplan.errors import InputError
from pdplan.workload import Workload, synthesize

I32 = np.array([100, 200, 300], np.int32)
OUT = np.array([10, 20, 30], np.int32)


@pytest.mark.parametrize(
    ("inp", "part"),
    [
        (100, "input_len must be a 1-D array, one value per request (got a scalar 100)"),
        (np.ones((3, 2), np.int32), "input_len must be a 1-D array"),
        (np.array([100.0, 100.7, 5.0]), "input_len[1] = 100.7 is not a whole number"),
        (np.array([1.0, 2.0, 0.6]), "input_len[2] = 0.6 is not a whole number"),
        (np.array([1.0, np.nan, 3.0]), "input_len[1] = nan is not a finite number"),
        (np.array([1, 2**40, 3]), "input_len[1] = 1099511627776 is too large"),
        (np.array([1, -5, 3]), "input_len[1] = -5 is negative"),
        (np.array(["100", "2", "3"]), "input_len must hold numbers of tokens"),
        (np.array([True, False, True]), "input_len must hold numbers of tokens"),
    ],
)
def test_bad_lengths_are_refused_by_row_and_value(inp: object, part: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning from deep inside
        with pytest.raises(InputError) as exc:
            Workload(inp, np.array([1, 2, 3]))  # type: ignore[arg-type]
    assert part in str(exc.value)


def test_output_lengths_are_checked_too() -> None:
    with pytest.raises(InputError, match=r"output_len\[2\] = -1 is negative"):
        Workload(I32, np.array([1, 2, -1]))
    with pytest.raises(InputError, match="output_len must be a 1-D array"):
        Workload(np.array([1]), 10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arrival", "part"),
    [
        (np.array([0.0, -1.0, 2.0]), "arrival_s[1] = -1.0"),
        (np.array([0.0, np.nan, 2.0]), "arrival_s[1] = nan"),
        (np.array([0.0, 1.0, np.inf]), "arrival_s[2] = inf"),
        (np.array(["0", "1", "2"]), "arrival_s must hold numbers of seconds"),
        (np.zeros((3, 1)), "arrival_s must be a 1-D array"),
        (np.zeros(2), "3 requests but 2 arrival times"),
    ],
)
def test_bad_arrivals_are_refused(arrival: np.ndarray, part: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError) as exc:
            Workload(I32, OUT, arrival)
    assert part in str(exc.value)


def test_session_ids_are_one_per_request() -> None:
    with pytest.raises(InputError, match="3 requests but 2 session ids"):
        Workload(I32, OUT, session_id=np.array([1, 2]))
    with pytest.raises(InputError, match="session_id must hold integer ids"):
        Workload(I32, OUT, session_id=np.array([1.5, 2.0, 3.0]))


def test_valid_columns_are_kept_or_converted_to_the_stored_dtypes() -> None:
    w = Workload(I32, OUT, np.array([0.0, 2.0, 1.0]), session_id=np.array([7, 7, 8]))
    assert w.input_len is I32 and w.output_len is OUT  # int32 in, no copy
    w = Workload(np.array([100.0, 0.0, 3.0]), [1, 0, 2**31 - 1], np.array([0, 5, 1]))
    assert w.input_len.dtype == np.int32 and w.input_len.tolist() == [100, 0, 3]
    assert w.output_len.dtype == np.int32 and w.output_len.tolist() == [1, 0, 2**31 - 1]
    assert w.arrival_s is not None and w.arrival_s.dtype == np.float64
    assert w.arrival_s.tolist() == [0.0, 5.0, 1.0]  # unsorted arrivals are kept as given
    assert len(Workload(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))) == 0


def _hashed(**kw: object) -> Workload:
    args: dict[str, object] = dict(hash_offsets=np.array([0, 1, 1, 3]), hash_ids=np.arange(3))
    args.update(kw)
    return Workload(I32, OUT, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "part"),
    [
        ({"block_tokens": -64}, "block_tokens=-64 must be a whole number of tokens in [1,"),
        ({"block_tokens": 0}, "block_tokens=0 must be"),
        ({"block_tokens": 16.0}, "block_tokens=16.0 must be"),
        ({"block_tokens": True}, "block_tokens=True must be"),
        ({"hash_ids": None}, "hash_offsets and hash_ids go together: hash_ids is missing"),
        ({"hash_offsets": None}, "hash_offsets and hash_ids go together: hash_offsets is"),
        ({"hash_offsets": np.array([0.0, 1, 1, 3])}, "hash_offsets must hold integer positions"),
        ({"hash_offsets": np.array([1, 1, 1, 3])}, "hash_offsets[0] = 1 must be 0"),
        ({"hash_offsets": np.array([0, 2, 1, 3])}, "hash_offsets[2] = 1 is below"),
        ({"hash_offsets": np.array([0, 1, 1, 2])}, "hash_offsets ends at 2 but there are 3"),
        ({"hash_offsets": np.array([0, 1, 3])}, "one entry per request plus one (4), not 3"),
    ],
)
def test_bad_prefix_hash_fields_are_refused(kw: dict[str, object], part: str) -> None:
    with pytest.raises(InputError) as exc:
        _hashed(**kw)
    assert part in str(exc.value)


def test_good_prefix_hashes_pass_and_numpy_block_tokens_becomes_an_int() -> None:
    w = _hashed(block_tokens=np.int64(16), hash_offsets=np.array([0, 1, 1, 3], np.int32))
    assert w.block_tokens == 16 and type(w.block_tokens) is int
    assert w.hash_offsets is not None and w.hash_offsets.dtype == np.int64
    assert w.hashes(2).tolist() == [1, 2]


@pytest.mark.parametrize(
    ("idx", "part"),
    [
        ([0, 3], "take(): index 3 (position 1) is out of range for a workload of 3 rows"),
        ([-1], "take(): index -1 (position 0) is out of range"),
        (np.array([True, False, True]), "not a boolean mask"),
        (np.array([0.0, 1.0]), "take() wants integer row positions"),
    ],
)
def test_take_refuses_an_index_out_of_range(idx: object, part: str) -> None:
    with pytest.raises(InputError) as exc:
        _hashed().take(idx)  # type: ignore[arg-type]
    assert part in str(exc.value)


def test_take_reorders_rows_and_hashes() -> None:
    w = Workload(I32, OUT, np.array([2.0, 0.0, 1.0]), np.array([0, 1, 1, 3]), np.arange(3))
    t = w.take(np.array([1, 2, 0]))
    assert t.input_len.tolist() == [200, 300, 100] and t.arrival_s is not None
    assert t.arrival_s.tolist() == [0.0, 1.0, 2.0]
    assert [t.hashes(i).tolist() for i in range(3)] == [[], [1, 2], [0]]
    assert len(w.take([])) == 0


@pytest.mark.parametrize(
    ("kw", "part"),
    [
        ({"n": 100, "arrival": "gamma", "cv": 1e-300}, "cv=1e-300 must be in [0.001, 100]"),
        ({"n": 100, "arrival": "gamma", "cv": 1e200}, "cv=1e+200 must be in [0.001, 100]"),
        ({"n": 10.5}, "n=10.5 must be a whole number >= 1"),
        ({"n": True}, "n=True must be a whole number >= 1 (an int, not a bool)"),
        ({"n": 0}, "n=0 must be a whole number >= 1"),
        ({"n": 10, "rate": "5"}, "rate='5' must be a real number (got str)"),
        ({"n": 10, "rate": True}, "rate=True must be a real number (got bool)"),
        ({"n": 10, "cv": "1"}, "cv='1' must be a real number"),
        ({"n": 10, "seed": 1.5}, "seed=1.5 must be a whole number >= 0"),
        ({"n": 10, "seed": False}, "seed=False must be a whole number >= 0"),
    ],
)
def test_synthesize_refuses_bad_arguments_by_name(kw: dict[str, object], part: str) -> None:
    with pytest.raises(InputError) as exc:
        synthesize(**kw)  # type: ignore[arg-type]
    assert part in str(exc.value)


def test_synthesize_takes_numpy_numbers_and_the_cv_bounds() -> None:
    w = synthesize(n=np.int64(5), rate=np.float32(2.0), seed=np.int64(3))
    assert len(w) == 5 and type(w.meta["params"]["n"]) is int  # type: ignore[index]
    for cv in (1e-3, 100.0):
        assert len(synthesize(n=50, arrival="gamma", cv=cv, rate=5)) == 50
