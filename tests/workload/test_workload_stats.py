"""workload_stats on small hand-computed workloads; duration parsing."""

from __future__ import annotations

import numpy as np
import pytest

from pdplan.errors import InputError
from pdplan.workload import Workload, parse_duration, prefix_hits, workload_stats


def _w(
    times: list[float] | None, inp: list[int], out: list[int], hashes: list[list[int]] | None = None
) -> Workload:
    offsets = ids = None
    if hashes is not None:
        offsets = np.cumsum([0] + [len(h) for h in hashes]).astype(np.int64)
        ids = np.array([x for h in hashes for x in h], dtype=np.int64)
    t = None if times is None else np.array(times, dtype=np.float64)
    return Workload(np.array(inp, dtype=np.int32), np.array(out, dtype=np.int32), t, offsets, ids)


def test_rate_cv_and_percentiles_by_hand() -> None:
    # gaps 1, 1, 2 -> mean 4/3, population std sqrt(2/9) -> CV = sqrt(2)/4 = 0.353553...
    s = workload_stats(_w([0, 1, 2, 4], [10, 20, 30, 40], [1, 0, 3, 4]))
    assert s["requests"] == 4 and s["span_s"] == 4.0
    assert s["mean_rate_rps"] == pytest.approx(3 / 4)
    assert s["interarrival_cv"] == pytest.approx(np.sqrt(2) / 4)
    assert s["input"]["mean"] == 25.0
    assert s["input"]["p50"] == 25.0  # linear between 20 and 30
    assert s["input"]["p90"] == pytest.approx(37.0)  # 30 + 0.7 * 10
    assert s["input"]["max"] == 40 and s["input"]["total"] == 100
    assert s["zero_output"] == 1


def test_joint_histogram_log2_bins() -> None:
    s = workload_stats(_w(None, [1, 3, 3], [0, 2, 5]))
    j = s["joint_histogram"]
    assert j["input_edges"] == [0, 1, 2, 4]
    assert j["output_edges"] == [0, 1, 2, 4, 8]
    # input 1 -> bin [1,2); input 3 -> bin [2,4]; output 0 -> [0,1), 2 -> [2,4), 5 -> [4,8]
    assert j["counts"] == [[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1]]


def test_prefix_reuse_unbounded_and_lru() -> None:
    w = _w([0, 1, 2, 3], [1, 1, 1, 1], [1, 1, 1, 1], [[1, 2], [1, 3], [4], [2, 1]])
    s = workload_stats(w)
    # blocks 1 2 | 1 3 | 4 | 2 1 -> seen before: 1, 2, 1 = 3 of 7
    assert s["prefix"]["blocks"] == 7 and s["prefix"]["reused_blocks"] == 3
    assert s["prefix"]["reuse_ratio"] == pytest.approx(3 / 7)
    # LRU of 2: [1,2] -> 1 hit -> [2,1] -> 3 miss, evict 2 -> [1,3] -> 4 miss -> [3,4]
    # -> 2 miss -> [4,2] -> 1 miss: 1 hit of 7
    hits = prefix_hits(w, lru_blocks=2)
    assert hits is not None and hits.tolist() == [False, False, True, False, False, False, False]
    with pytest.raises(InputError):
        prefix_hits(w, lru_blocks=0)


def test_windows_show_drift() -> None:
    w = _w([0, 1, 2, 10, 11], [10, 10, 10, 100, 100], [1, 1, 1, 5, 5], [[1], [1], [1], [2], [3]])
    s = workload_stats(w, window_s=10)
    wins = s["windows"]
    assert [x["requests"] for x in wins] == [3, 2]
    # the last window ends at the last arrival (t = 11): 2 requests over its 1 s
    assert [x["rate_rps"] for x in wins] == [0.3, 2.0]
    assert [x["duration_s"] for x in wins] == [10.0, 1.0] and wins[1]["partial"]
    assert wins[0]["input"]["mean"] == 10.0 and wins[1]["input"]["mean"] == 100.0
    assert wins[0]["reuse_ratio"] == pytest.approx(2 / 3) and wins[1]["reuse_ratio"] == 0.0
    with pytest.raises(InputError, match="larger window"):
        workload_stats(w, window_s=1e-6)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15m", 900.0), ("1h", 3600.0), ("90s", 90.0), ("300", 300.0), ("1d", 86400.0)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "15x", "-5m", "0"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(InputError):
        parse_duration(text)
