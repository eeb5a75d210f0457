"""Fuzz: random bytes and mutated valid files raise nothing but InputError, in every reader."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdplan.errors import InputError
from pdplan.workload import Workload, parse_metrics, read_workload

FORMATS = [None, "azure", "burstgpt", "mooncake", "vidur", "csv", "jsonl", "parquet", "prometheus"]
SAMPLES = {
    "azure.csv": b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
    b"2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.0000000,12,3\n",
    "mooncake.jsonl": b'{"timestamp": 0, "input_length": 6758, "output_length": 500, '
    b'"hash_ids": [0, 1]}\n'
    b'{"timestamp": 27, "input_length": 700, "output_length": 4, "hash_ids": [0, 2]}\n',
    "burst.csv": b"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    b"5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,1087,0,1087,API log\n",
    "metrics.txt": b"# TYPE vllm:request_prompt_tokens histogram\n"
    b'vllm:request_prompt_tokens_bucket{le="10.0"} 1.0\n'
    b'vllm:request_prompt_tokens_bucket{le="+Inf"} 2.0\n'
    b"vllm:request_prompt_tokens_count 2.0\nvllm:request_prompt_tokens_sum 30.0\n"
    b'vllm:request_generation_tokens_bucket{le="5.0"} 2.0\n'
    b'vllm:request_generation_tokens_bucket{le="+Inf"} 2.0\n',
}
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read_ok(data: bytes, name: str, fmt: str | None, skip_bad: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / name
        p.write_bytes(data)
        try:
            w = read_workload(p, fmt=fmt, skip_bad=skip_bad)
        except InputError:
            return
        assert isinstance(w, Workload) and len(w) > 0


@FUZZ
@given(data=st.binary(max_size=400), fmt=st.sampled_from(FORMATS), skip=st.booleans())
def test_random_bytes(data: bytes, fmt: str | None, skip: bool) -> None:
    _read_ok(data, "f.bin", fmt, skip)


@FUZZ
@given(
    data=st.binary(max_size=300), magic=st.sampled_from([b"PAR1", b"\x1f\x8b", b"{", b"# HELP "])
)
def test_random_bytes_behind_magic(data: bytes, magic: bytes) -> None:
    _read_ok(magic + data, "m.bin", None, False)


def _mutate(base: bytes, ops: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(base)
    for kind, pos, chunk in ops:
        i = pos % (len(out) + 1)
        if kind == 0:
            out[i:i] = chunk  # insert
        elif kind == 1:
            out[i : i + len(chunk)] = chunk  # overwrite
        elif kind == 2:
            del out[i : i + 1 + len(chunk)]  # delete
        else:
            out = out[:i]  # truncate
    return bytes(out)


_OPS = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.integers(0, 10_000),
        st.sampled_from(
            [
                b"-",
                b"x",
                b",",
                b"\n",
                b"\x00",
                b"\xff",
                b'"',
                b"1e999",
                b"[",
                b"9" * 25,
                b"NaN",
                b" ",
                b"{}",
                b"+00:00",
            ]
        )
        | st.binary(min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=4,
)


@FUZZ
@given(sample=st.sampled_from(sorted(SAMPLES)), ops=_OPS, skip=st.booleans(), gz=st.booleans())
def test_mutated_valid_files(
    sample: str, ops: list[tuple[int, int, bytes]], skip: bool, gz: bool
) -> None:
    data = _mutate(SAMPLES[sample], ops)
    if gz:
        data = gzip.compress(data)
    _read_ok(data, sample + (".gz" if gz else ""), None, skip)


@FUZZ
@given(ops=_OPS)
def test_mutated_gzip_stream(ops: list[tuple[int, int, bytes]]) -> None:
    _read_ok(_mutate(gzip.compress(SAMPLES["azure.csv"]), ops), "a.csv.gz", None, False)


@FUZZ
@given(text=st.text(max_size=300))
def test_metrics_parser_text(text: str) -> None:
    try:
        parse_metrics(text)
    except InputError:
        pass


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_samples_are_valid(name: str) -> None:
    fmt = "prometheus" if name == "metrics.txt" else None
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / name
        p.write_bytes(SAMPLES[name])
        assert len(read_workload(p, fmt=fmt)) >= 2
