"""Black-box round 10: --format with --map, duplicate header columns, hash block size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main
from pdplan.workload import read_workload

AZURE = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:17:03.0,100,10\n"
    "2023-11-16 18:17:05.0,200,20\n"
)
# 16-token hash blocks: a 32-token prompt has 2 blocks, a 48-token one 3
BLOCKS16 = 'ts,inp,outp,h\n0,32,5,"1 2"\n1,48,5,"1 2 3"\n'
MAP16 = "input=inp,output=outp,time=ts,hashes=h"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_map_on_top_of_a_format_keeps_the_presets_other_columns(tmp_path: Path) -> None:
    f = tmp_path / "a.csv"
    f.write_text(AZURE)
    w = read_workload(f, fmt="azure", mapping="input=ContextTokens,output=GeneratedTokens")
    assert w.arrival_s is not None and w.arrival_s.tolist() == [0.0, 2.0]  # TIMESTAMP kept
    w = read_workload(f, fmt="azure", mapping="input=GeneratedTokens")  # only input remapped
    assert w.input_len.tolist() == [10, 20] and w.output_len.tolist() == [10, 20]


def test_a_mapped_column_named_twice_in_the_header_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "dup.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2024-05-10,5,3,9\n")
    rc, out, err = _run(capsys, "workload", "inspect", str(f))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "['ContextTokens'] appear more than once in the header" in err and str(f) in err


def test_more_hash_blocks_than_the_prompt_has_is_flagged_with_the_likely_size(
    tmp_path: Path,
) -> None:
    f = tmp_path / "b.csv"
    f.write_text(BLOCKS16)
    w = read_workload(f, mapping=MAP16)  # read as 512-token blocks: 2 blocks for 32 tokens
    assert w.block_tokens == 512
    assert any("probably 16 tokens" in m and "block_tokens=16" in m for m in w.meta["warnings"])
    ok = read_workload(f, mapping=MAP16 + ",block_tokens=16")
    assert ok.meta["warnings"] == []


def test_real_mooncake_trace_has_no_block_warning(traces: Path) -> None:
    w = read_workload(traces / "mooncake_fast25" / "conversation_trace.jsonl")
    assert w.meta["warnings"] == []


def test_convert_says_how_to_read_back_non_512_token_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = tmp_path / "b.csv", tmp_path / "b.jsonl"
    src.write_text(BLOCKS16)
    rc, out, _ = _run(
        capsys, "workload", "convert", str(src), str(dst), "--map", MAP16 + ",block_tokens=16",
        "--json",
    )  # fmt: skip
    assert rc == 0
    assert any("--format mooncake --map block_tokens=16" in m for m in json.loads(out)["warnings"])
    back = read_workload(dst, fmt="mooncake", mapping="block_tokens=16")
    assert back.block_tokens == 16 and back.meta["warnings"] == []
    assert back.arrival_s is not None and back.arrival_s.tolist() == [0.0, 1.0]
