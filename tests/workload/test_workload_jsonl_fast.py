"""JSONL fast path (pyarrow.json blocks) vs the careful line-by-line path: same arrays, errors."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pdplan.workload.jsonl_reader as jr
from pdplan.errors import InputError
from pdplan.workload import Workload
from pdplan.workload.formats import detect

LINES = [
    '{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}',
    '{"timestamp": 27, "input_length": 700, "output_length": 4, "hash_ids": [0, 3]}',
    '{"timestamp": 27.5, "input_length": 1, "output_length": 0, "hash_ids": []}',
    '{"timestamp": 3000, "input_length": 2147483647, "output_length": 9, '
    '"hash_ids": [9223372036854775807, -5]}',
    '{"input_length": 12, "hash_ids": [7], "output_length": 3, "timestamp": 1e3, "x": "a"}',
]


def _read(path: Path, fast: bool, skip_bad: bool = False) -> Workload:
    _, cmap, name = detect(str(path), None, None)
    return jr.read_jsonl(str(path), cmap, name, skip_bad, fast=fast)


def _same(a: Workload, b: Workload) -> None:
    for field in ("input_len", "output_len", "arrival_s", "hash_offsets", "hash_ids"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), field
    assert a.meta["skipped"] == b.meta["skipped"]
    assert a.meta["skipped_examples"] == b.meta["skipped_examples"]
    assert a.meta.get("blank_lines") == b.meta.get("blank_lines")


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """~3 lines per block, so one file exercises many fast and careful blocks."""
    monkeypatch.setattr(jr, "BLOCK_BYTES", 200)
    monkeypatch.setattr(jr, "_PIECE", 64)


def test_fast_equals_careful_small_file(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(LINES * 3))  # no final newline
    fast, slow = _read(p, True), _read(p, False)
    _same(fast, slow)
    assert fast.meta["fast_rows"] == 15 and slow.meta["fast_rows"] == 0
    # stable sort by time: 0, 0, 0, 27 ms x3, 27.5 ms x3, 1000 ms x3, 3000 ms x3
    assert fast.input_len.tolist()[::3] == [6758, 700, 1, 12, 2147483647]
    assert fast.hashes(0).tolist() == [0, 1, 2]  # sorted by time: row 0 has timestamp 0
    assert fast.hash_offsets is not None and fast.hash_offsets[-1] == 3 * (3 + 2 + 0 + 2 + 1)
    # 1e3 ms = 1 s and 3000 ms = 3 s from the first request
    assert fast.arrival_s is not None and fast.arrival_s.max() == pytest.approx(3.0)


def test_fast_equals_careful_many_blocks(tmp_path: Path, small_blocks: None) -> None:
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(LINES * 20) + "\n")
    fast, slow = _read(p, True), _read(p, False)
    _same(fast, slow)
    assert fast.meta["fast_rows"] == 100


def test_bad_line_named_in_a_later_block(tmp_path: Path, small_blocks: None) -> None:
    lines = LINES * 10
    lines[37] = '{"timestamp": 1, "input_length": -3, "output_length": 2, "hash_ids": [1]}'
    lines[41] = '{"timestamp": 1, "input_length": 3, "output_length": 2, "hash_ids": [1.5]}'
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    for fast in (True, False):
        with pytest.raises(InputError, match=r"bad\.jsonl:38: negative length"):
            _read(p, fast)
    fast_w, slow_w = _read(p, True, skip_bad=True), _read(p, False, skip_bad=True)
    _same(fast_w, slow_w)
    assert fast_w.meta["skipped"] == {
        "negative length": 1,
        "hash_ids must be a list of integers": 1,
    }
    assert len(fast_w) == 48 and 0 < int(fast_w.meta["fast_rows"]) < 48  # type: ignore[call-overload]


def test_gzip_fast_equals_careful(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl.gz"
    p.write_bytes(gzip.compress(("\n".join(LINES * 4) + "\n").encode()))
    fast, slow = _read(p, True), _read(p, False)
    _same(fast, slow)
    assert fast.meta["fast_rows"] == 20


def test_real_mooncake_conversation_trace(traces: Path) -> None:
    p = traces / "mooncake_fast25" / "conversation_trace.jsonl"
    if not p.exists():
        pytest.skip("conversation_trace.jsonl not available")
    fast, slow = _read(p, True), _read(p, False)
    _same(fast, slow)
    assert len(fast) == 12031 and fast.meta["fast_rows"] == 12031


# -- differential fuzz: mutated files read the same through both paths ----------------------
_OPS = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.integers(0, 10_000),
        st.sampled_from(
            [
                *(b"\n", b"\r", b" ", b"{", b"}", b"[", b"]", b",", b"-", b"0", b"1.5", b"null"),
                *(b'"x"', b"\xff", b"NaN", b"9" * 20, b'"input_length": 1, ', b"\t"),
                b"\xef\xbb\xbf",
            ]
        ),
    ),
    min_size=1,
    max_size=3,
)
_BASE = ("\n".join(LINES * 4) + "\n").encode()


def _outcome(data: bytes, fast: bool, skip: bool) -> Workload | str:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "f.jsonl"
        p.write_bytes(data)
        try:
            _, cmap, name = detect(str(p), "mooncake", None)
            return jr.read_jsonl(str(p), cmap, name, skip, fast=fast)
        except InputError as exc:
            return str(exc).replace(tmp, "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS, skip=st.booleans())
def test_mutations_read_the_same_both_ways(ops: list[tuple[int, int, bytes]], skip: bool) -> None:
    data = bytearray(_BASE)
    for kind, pos, chunk in ops:
        i = pos % (len(data) + 1)
        if kind == 0:
            data[i:i] = chunk
        elif kind == 1:
            data[i : i + len(chunk)] = chunk
        else:
            del data[i : i + len(chunk)]
    old = (jr.BLOCK_BYTES, jr._PIECE)
    jr.BLOCK_BYTES, jr._PIECE = 200, 64  # hypothesis and function fixtures do not mix
    try:
        fast = _outcome(bytes(data), True, skip)
        slow = _outcome(bytes(data), False, skip)
    finally:
        jr.BLOCK_BYTES, jr._PIECE = old
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
    else:
        _same(fast, slow)
