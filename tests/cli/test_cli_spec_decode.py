"""`--spec-decode` on `pdplan estimate` and `pdplan simulate`: per-token TPOT, clear errors."""

from __future__ import annotations

import json

import pytest

from pdplan.cli import main

EST = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--layout", "tp1")
EST += ("--isl", "1024", "--osl", "256", "-c", "4", "--json")
SIM = ("simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1")
SIM += ("--workload", "closed:c=4,n=40,isl=1024,osl=256", "--json")


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_estimate_tpot_falls_with_acceptance(capsys: pytest.CaptureFixture[str]) -> None:
    plain = _json(capsys, *EST)["estimate"]["tpot_ms"]
    low = _json(capsys, *EST, "--spec-decode", "eagle:3:0.3")["estimate"]["tpot_ms"]
    high = _json(capsys, *EST, "--spec-decode", "eagle:3:0.9")["estimate"]["tpot_ms"]
    assert high < 0.5 * plain  # batch-4 8B decode streams its weights: ~3.4 tokens a pass
    assert high < low
    said = _json(capsys, *EST, "--spec-decode", "eagle:3:0.9")["spec_decode"]
    assert said["method"] == "eagle" and said["tokens_per_step"] == pytest.approx(3.439)
    assert "spec_decode" not in _json(capsys, *EST)


def test_simulate_agrees_with_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, *SIM, "--spec-decode", "eagle:2")
    assert out["spec_decode"]["draft_tokens"] == 2
    sim = out["tpot_s"]["p50"] * 1e3
    est = _json(capsys, *EST, "--spec-decode", "eagle:2")["estimate"]["tpot_ms"]
    assert sim == pytest.approx(est, rel=0.1)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("medusa:2", "unknown speculative method 'medusa'"),
        ("mtp", "expected METHOD:DRAFT_TOKENS[:ACCEPTANCE]"),
        ("mtp:2", "ships no MTP layers"),
        ("mtp:3:1.5", "acceptance=1.5 must be a probability"),
    ],
)
def test_bad_values_name_the_problem(
    capsys: pytest.CaptureFixture[str], value: str, says: str
) -> None:
    for cmd in (EST, SIM):
        assert main([*cmd, "--spec-decode", value]) == 2
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err


def test_ratio_needs_fewer_decode_gpus_with_drafts(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("ratio", "--model", "llama-3.1-8b", "--gpu", "h100", "--json")
    plain = _json(capsys, *base)
    mtp = _json(capsys, *base, "--spec-decode", "eagle:3")
    assert mtp["decode_tps"] > plain["decode_tps"]
    assert mtp["ratio"] > plain["ratio"]  # prefill : decode GPUs
    assert any("tokens a step" in n for n in mtp["notes"])
    assert mtp["spec_decode"]["method"] == "eagle" and "spec_decode" not in plain
    assert main(["ratio", "--prefill-tps", "8000", "--decode-tps", "2000",
                 "--spec-decode", "mtp:3"]) == 2  # fmt: skip
    assert "--spec-decode only applies" in capsys.readouterr().err


def test_default_layout_holds_the_draft_head(capsys: pytest.CaptureFixture[str]) -> None:
    # DeepSeek-V3 FP8 on B200 at 8 clients: tp4 holds the weights with KV room to spare; its
    # MTP layer (~11 GB) leaves room for one request, so the default widens to tp8
    args = ("estimate", "--model", "deepseek-v3", "--gpu", "b200", "-c", "8", "--json")
    plain, mtp = _json(capsys, *args), _json(capsys, *args, "--spec-decode", "mtp:3")
    assert plain["layout"] == "tp4" and mtp["layout"] == "tp8"
    assert mtp["estimate"]["decode_batch"] > 7


def test_a_layout_the_draft_head_overfills_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # the heaviest stage of tp8-pp2 (30 MoE layers + LM head: the first stage's 3 dense
    # layers make it the lighter one) fits a 48 GiB L40, not with the MTP layer on top
    args = ["estimate", "--model", "deepseek-v3", "--gpu", "l40", "--layout", "tp8-pp2"]
    assert main(args) == 0  # fits without a draft head
    capsys.readouterr()
    assert main([*args, "--spec-decode", "mtp:3"]) == 2
    err = capsys.readouterr().err
    assert "draft head" in err and "short by" in err and err.count("\n") == 1
