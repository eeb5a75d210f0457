"""Black-box round 11: repeated layout parts, GPU counts no layout can use, cheap enumeration,
SP's comm volume equal to TP's, and `pdplan parallel`'s context-window warning."""

from __future__ import annotations

import json
import time

import pytest

from pdplan.cli import main
from pdplan.errors import ConfigError
from pdplan.parallel import (
    Layout,
    check_gpu_count,
    check_layout,
    comm_table,
    comm_totals,
    enumerate_layouts,
    max_layout_gpus,
)
from pdplan.parallel.search import divisors

from ._specs import dsv3, llama70b


@pytest.mark.parametrize(
    ("text", "part"),
    [("tp8-tp2", "TP"), ("tp4-sp-sp", "SP"), ("dp2-adp2-ep4", "DP"), ("tp=2,pp=2,pp=4", "PP")],
)
def test_a_layout_that_repeats_a_part_is_refused(text: str, part: str) -> None:
    with pytest.raises(ConfigError, match=f"gives {part} twice; name each part once"):
        Layout.parse(text)


def test_divisors_are_cheap_and_exact() -> None:
    assert divisors(1) == [1] and divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]
    assert divisors(100_000_007) == [1, 100_000_007]  # prime: trial division to sqrt only
    assert len(divisors(735_134_400)) == 1344  # a highly composite number


def test_max_layout_gpus_bounds_every_factor() -> None:
    # dense: PP <= 8 (max_pp) x TP <= 64 heads; CP only from 32k tokens, one token per rank
    assert max_layout_gpus(llama70b(), 8, 8192) == 8 * 64
    assert max_layout_gpus(llama70b(), 8, 65536) == 8 * 64 * 65536
    # MoE: a stage is expert TP x EP <= expert FFN width x experts
    assert max_layout_gpus(dsv3(), 4, None) == 4 * 256 * dsv3().moe.expert_intermediate_size
    top = max_layout_gpus(llama70b(), 8, 8192)
    assert enumerate_layouts(llama70b(), top, context_len=8192) == [Layout(tp=64, pp=8)]


def test_a_gpu_count_beyond_any_layout_is_refused_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ConfigError, match=r"--gpus 513: no layout of llama-3.1-70b .* at most 512"):
        check_gpu_count(llama70b(), 513, 8, 8192)
    check_gpu_count(llama70b(), 512, 8, 8192)
    for n in ("1000000000", "100000007"):
        t0 = time.perf_counter()
        rc = main(["parallel", "-m", "llama-3.1-70b", "-g", "h100", "--gpus", n])
        err = capsys.readouterr().err
        assert rc == 2 and "no layout of llama-3.1-70b uses that many GPUs" in err, err
        assert time.perf_counter() - t0 < 5.0  # it ran for minutes (1e9) / 9.5 s (100000007)


def test_enumeration_is_cheap_for_large_counts() -> None:
    t0 = time.perf_counter()
    assert enumerate_layouts(llama70b(), 100_000_007, context_len=131072) == []
    lays = enumerate_layouts(dsv3(), 2**18, context_len=131072, max_pp=1)
    assert time.perf_counter() - t0 < 5.0
    assert lays and all(x.gpus == 2**18 and x.etp * x.ep == 2**18 for x in lays)


def test_cp_needs_a_token_per_rank() -> None:
    chk = check_layout(llama70b(), Layout(tp=8, cp=65536), context_len=32768)
    assert any("less than 1 token per rank" in e for e in chk.errors)


def test_sp_sends_the_same_bytes_as_tp_at_4096_tokens() -> None:
    plain = comm_totals(comm_table(llama70b(), Layout(tp=8), 4096), 4096, 80)
    sp = comm_totals(comm_table(llama70b(), Layout(tp=8, sp=True), 4096), 4096, 80)
    assert sp["bytes_per_token_layer"] == pytest.approx(plain["bytes_per_token_layer"])
    assert plain["bytes_per_token_layer"] == pytest.approx(2 * 8192 * 2 * 2 * 7 / 8)


def test_parallel_cli_sp_table_totals_match_tp(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["parallel", "-m", "llama-3.1-70b", "-g", "h100", "--tokens", "4096", "--json"]
    totals = []
    for lay in ("tp8", "tp8-sp"):
        assert main([*base, "--layout", lay]) == 0
        c = json.loads(capsys.readouterr().out)["comm"]
        totals.append(c["totals"]["bytes_per_token_layer"])
        if lay == "tp8-sp":
            rs = [o for o in c["ops"] if o["collective"] == "reduce-scatter"]
            assert rs[0]["wire_bytes_per_call"] == pytest.approx(7 / 8 * rs[0]["bytes_per_call"])
    assert totals[0] == pytest.approx(totals[1]) == pytest.approx(57_344)


@pytest.mark.parametrize("context", ["200000", str(10**30)])
def test_parallel_warns_past_the_context_window(
    capsys: pytest.CaptureFixture[str], context: str
) -> None:
    rc = main(["parallel", "-m", "llama-3.1-70b", "-g", "h100", "--context", context, "--json"])
    out, err = capsys.readouterr()
    assert rc == 0 and "warning: --context of" in err and "131,072-token context" in err
    assert any("131,072-token context" in w for w in json.loads(out)["warnings"])
    main(["parallel", "-m", "llama-3.1-70b", "-g", "h100", "--context", "8192", "--json"])
    assert "warning" not in capsys.readouterr().err
