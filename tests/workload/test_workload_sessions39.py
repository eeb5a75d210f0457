"""Session ids: string keys never collide with integer ids, and writers give back what was read
(string keys as text, rows without a session as empty, not internal codes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from pdplan.workload import read_workload, write_workload
from pdplan.workload.core import NO_SESSION

ROWS = [
    {"timestamp": 0, "input_length": 10, "output_length": 5, "session_id": "conv-a"},
    {"timestamp": 5, "input_length": 11, "output_length": 5, "session_id": None},
    {"timestamp": 7, "input_length": 12, "output_length": 5, "session_id": -2},
    {"timestamp": 9, "input_length": 13, "output_length": 5, "session_id": "conv-b"},
    {"timestamp": 11, "input_length": 14, "output_length": 5, "session_id": "conv-a"},
    {"timestamp": 12, "input_length": 15, "output_length": 5},
]


def _trace(tmp_path: Path) -> Path:
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return p


def _groups(ids: np.ndarray) -> list[list[int]]:
    """Rows grouped by session id, as sorted lists of row indices."""
    by: dict[int, list[int]] = {}
    for i, v in enumerate(ids.tolist()):
        by.setdefault(v, []).append(i)
    return sorted(by.values())


def test_string_keys_do_not_collide_with_negative_integer_ids(tmp_path: Path) -> None:
    w = read_workload(str(_trace(tmp_path)))
    assert w.session_id is not None
    # conv-a twice; the null, the -2, conv-b and the row without the key each alone
    assert _groups(w.session_id) == [[0, 4], [1], [2], [3], [5]]
    assert w.session_id[2] == -2
    assert w.meta["session_labels"] == ["conv-a", "conv-b"]


@pytest.mark.parametrize("name", ["out.jsonl", "out.csv", "out.parquet"])
def test_written_sessions_read_back_as_the_same_groups(tmp_path: Path, name: str) -> None:
    w = read_workload(str(_trace(tmp_path)))
    out = tmp_path / name
    write_workload(w, out)
    back = read_workload(str(out))
    assert back.session_id is not None and w.session_id is not None
    assert _groups(back.session_id) == _groups(w.session_id)
    assert back.meta["rows_without_session"] == 2
    assert int(back.session_id.min()) <= NO_SESSION  # the two sessionless rows stay so


def test_jsonl_writes_labels_and_null_not_internal_codes(tmp_path: Path) -> None:
    w = read_workload(str(_trace(tmp_path)))
    out = tmp_path / "out.jsonl"
    write_workload(w, out)
    got = [json.loads(ln)["session_id"] for ln in out.read_text().splitlines()]
    assert got == ["conv-a", None, -2, "conv-b", "conv-a", None]


def test_parquet_integer_sessions_stay_integers_with_nulls(tmp_path: Path) -> None:
    p = tmp_path / "i.jsonl"
    rows = [{"input_length": 3, "output_length": 2, "session_id": s} for s in (7, None, 7, 9)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "i.parquet"
    write_workload(read_workload(str(p)), out)
    col = pq.read_table(out).column("session_id")
    assert str(col.type) == "int64"
    assert col.to_pylist() == [7, None, 7, 9]
