"""Readers: real traces from ../shared, every format, gzip, bad rows, sorting, round trips."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from pdplan.errors import InputError
from pdplan.workload import read_workload, synthesize, workload_stats, write_workload


def test_azure_conv_matches_published_stats(traces: Path) -> None:
    w = read_workload(traces / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv")
    s = workload_stats(w)
    assert s["format"] == "azure"
    assert s["requests"] == 19366  # trace_stats.csv
    assert s["input"]["mean"] == pytest.approx(1154.7, abs=0.05)
    assert s["input"]["p99"] == pytest.approx(4142.0)
    assert s["output"]["p90"] == pytest.approx(424.0)
    assert s["span_s"] == pytest.approx(3501.722, abs=1e-3)
    assert s["interarrival_cv"] == pytest.approx(1.094, abs=1e-3)
    assert s["input"]["total"] == 22361870


def test_mooncake_conversation_counts_and_reuse(traces: Path) -> None:
    w = read_workload(traces / "mooncake_fast25" / "conversation_trace.jsonl")
    assert len(w) == 12031 and w.has_hashes
    s = workload_stats(w, window_s=900)
    assert s["mean_rate_rps"] == pytest.approx(3.4012, abs=1e-4)
    assert s["input"]["p99"] == pytest.approx(85400.4)
    assert 0.0 < s["prefix"]["reuse_ratio"] < 1.0
    assert len(s["windows"]) == 4
    assert sum(win["requests"] for win in s["windows"]) == 12031
    # a small LRU can only lose hits
    s_lru = workload_stats(w, lru_blocks=1000)
    assert s_lru["prefix"]["reuse_ratio"] < s["prefix"]["reuse_ratio"]


def test_sharegpt_lengths_only(traces: Path) -> None:
    w = read_workload(
        traces / "sharegpt_sarathi" / "sharegpt_8k_filtered_stats_llama2_tokenizer.csv"
    )
    assert len(w) == 30731 and not w.has_times
    assert float(w.input_len.mean()) == pytest.approx(2340.0, abs=0.05)
    with pytest.raises(InputError, match="--window needs arrival times"):
        workload_stats(w, window_s=60)


def test_gzip_is_read(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        f.write("2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n")
    w = read_workload(p)
    assert w.input_len.tolist() == [374, 396]
    assert w.arrival_s is not None
    assert w.arrival_s[1] == pytest.approx(4.314579)  # 50.9951690 - 46.6805900


def test_azure_2024_utc_offset(tmp_path: Path) -> None:
    p = tmp_path / "a24.csv"
    p.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.009930+00:00,10,2\n2024-05-10 00:00:01.509930+00:00,20,3\n"
    )
    w = read_workload(p)
    assert w.arrival_s is not None and w.arrival_s.tolist() == pytest.approx([0.0, 1.5])


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def test_bad_line_is_named(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "bad.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.1,10,2\n2023-11-16 18:15:47.1,-5,2\n2023-11-16 18:15:48.1,x,1\n",
    )
    with pytest.raises(InputError) as err:
        read_workload(p)
    assert f"{p}:3:" in str(err.value) and "negative length" in str(err.value)
    w = read_workload(p, skip_bad=True)
    assert len(w) == 1
    assert w.meta["skipped"] == {"negative length": 1, "non-numeric length": 1}
    assert w.meta["skipped_total"] == 2


def test_wrong_field_count_and_jsonl_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "f.csv", "ContextTokens,GeneratedTokens\n1,2\n3\n")
    with pytest.raises(InputError, match=r"f\.csv:3: expected 2 fields, got 1"):
        read_workload(p)
    j = _write(
        tmp_path / "m.jsonl",
        '{"timestamp": 0, "input_length": 5, "output_length": 1}\n'
        '{"timestamp": 1, "input_length": "abc", "output_length": 1}\n{oops\n',
    )
    with pytest.raises(InputError, match=r"m\.jsonl:2: non-numeric length"):
        read_workload(j)
    w = read_workload(j, skip_bad=True)
    assert len(w) == 1 and w.meta["skipped"] == {"non-numeric length": 1, "not valid JSON": 1}


def test_unsorted_timestamps_are_sorted_with_warning(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "u.jsonl",
        "\n".join(
            f'{{"timestamp": {t}, "input_length": {i}, "output_length": 1, "hash_ids": [{i}]}}'
            for t, i in ((0, 10), (3000, 30), (1000, 20))
        )
        + "\n",
    )
    w = read_workload(p)
    assert w.input_len.tolist() == [10, 20, 30]
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 1.0, 3.0]
    assert w.hashes(1).tolist() == [20]  # hashes follow their request
    assert w.meta["out_of_order"] == 1 and "sorted" in w.meta["warnings"][0]


def test_empty_and_header_only_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="empty file"):
        read_workload(_write(tmp_path / "e.csv", ""))
    with pytest.raises(InputError, match="no requests"):
        read_workload(_write(tmp_path / "h.csv", "ContextTokens,GeneratedTokens\n"))
    with pytest.raises(InputError, match="cannot tell the trace format"):
        read_workload(_write(tmp_path / "x.csv", "a,b\n1,2\n"))


def test_burstgpt_failures_counted_not_dropped(tmp_path: Path) -> None:
    p = _write(
        tmp_path / "b.csv",
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,"
        "Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,"
        "Conversation log\n118,GPT-4,417,276,693,API log\n",
    )
    w = read_workload(p)
    assert w.meta["format"] == "burstgpt" and len(w) == 3
    s = workload_stats(w)
    assert s["zero_output"] == 1
    assert s["by_model"] == {"ChatGPT": 2, "GPT-4": 1}
    assert s["by_log_type"] == {"Conversation log": 2, "API log": 1}
    assert s["span_s"] == 113.0


def test_generic_mapping_csv_jsonl_parquet(tmp_path: Path) -> None:
    p = _write(tmp_path / "g.csv", "ts,prompt_len,gen_len,conv\n0,100,10,a\n250,200,20,b\n")
    w = read_workload(
        p, mapping="input=prompt_len,output=gen_len,time=ts,time_unit=ms,session=conv"
    )
    assert w.input_len.tolist() == [100, 200] and w.arrival_s is not None
    assert w.arrival_s.tolist() == [0.0, 0.25]
    assert w.session_id is not None and len(set(w.session_id.tolist())) == 2
    j = _write(tmp_path / "g.jsonl", '{"p": 7, "g": 3}\n{"p": 9, "g": 4}\n')
    assert read_workload(j, mapping={"input": "p", "output": "g"}).output_len.tolist() == [3, 4]
    with pytest.raises(InputError, match="not in the file"):
        read_workload(p, mapping="input=nope,output=gen_len")
    with pytest.raises(InputError, match="unknown --map key"):
        read_workload(p, mapping="inp=prompt_len")


@pytest.mark.parametrize("name", ["rt.jsonl", "rt.csv", "rt.parquet", "rt.jsonl.gz"])
def test_round_trip(tmp_path: Path, name: str) -> None:
    w = synthesize(n=50, rate=3.0, input="uniform:1:100", output="fixed:7", seed=3)
    offsets = np.arange(51, dtype=np.int64) * 2
    ids = np.arange(100, dtype=np.int64) % 13
    w = type(w)(w.input_len, w.output_len, w.arrival_s, offsets, ids, 512, None, w.meta)
    write_workload(w, tmp_path / name)
    back = read_workload(tmp_path / name)
    assert back.input_len.tolist() == w.input_len.tolist()
    assert back.output_len.tolist() == w.output_len.tolist()
    assert back.arrival_s is not None and w.arrival_s is not None
    assert np.allclose(back.arrival_s, w.arrival_s, atol=1e-6)
    assert back.hash_ids is not None and back.hash_ids.tolist() == ids.tolist()


def test_parquet_bad_row_named_by_row(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "b.parquet"
    pq.write_table(pa.table({"input_length": [5, -1, 7], "output_length": [1, 1, 1]}), p)
    with pytest.raises(InputError, match=r"b\.parquet:2: negative length"):
        read_workload(p)
    assert read_workload(p, skip_bad=True).input_len.tolist() == [5, 7]


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown format"):
        read_workload(tmp_path / "x", fmt="nope")
    with pytest.raises(InputError, match="no such file"):
        read_workload(tmp_path / "missing.csv")


def test_the_unit_a_time_column_was_read_in_is_recorded(tmp_path) -> None:
    from pdplan.workload import read_workload

    f = tmp_path / "gen.csv"
    f.write_text("timestamp,input_length,output_length\n0,100,10\n50,200,20\n")
    assert read_workload(str(f)).meta["time_unit"] == "ms"  # Mooncake / pdplan's layout
    sec = read_workload(str(f), fmt="mooncake", mapping="time_unit=s")
    assert sec.meta["time_unit"] == "s" and float(sec.arrival_s[-1]) == 50.0
