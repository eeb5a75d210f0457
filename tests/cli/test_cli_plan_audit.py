"""Audit fixes of `pdplan estimate`, `pdplan ratio` and `pdplan parallel`: estimate's default
layout is ratio's and a layout that does not fit says what would (1); a layout past the
NVLink domain of a PCIe box is named as PCIe traffic, and the parallel verdict states its
criterion (2); a prompt longer than the token budget is said to span iterations (3); a CP
layout names the --context it needs (4); a TPOT in milliseconds is refused (5)."""

from __future__ import annotations

import json
import re

import pytest

from pdplan.cli import main

pytest.importorskip("pdplan.perf.costmodel")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    rc, out, err = _run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


# 1. estimate's default layout, its --help, and what fits when a layout does not


@pytest.mark.parametrize("model", ["deepseek-v3", "kimi-k2"])
def test_estimate_default_layout_is_the_one_ratio_picks(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    job = ("--model", model, "--gpu", "h200")
    est = _json(capsys, "estimate", *job)
    rat = _json(capsys, "ratio", *job)
    assert est["layout"] == rat["decode_layout"] == "tp8"
    assert est["layout_note"].startswith("tp4 does not fit") and "using tp8" in est["layout_note"]
    dis = _json(capsys, "estimate", *job, "--mode", "disagg", "-c", "4")
    assert (dis["prefill_layout"], dis["decode_layout"], dis["gpus"]) == ("tp8", "tp8", 16)


def test_estimate_default_layout_stays_tp4_where_it_fits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = _json(capsys, "estimate", "--model", "llama-3.1-70b", "--gpu", "h100")
    assert d["layout"] == "tp4" and "layout_note" not in d


def test_estimate_help_states_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "estimate", "--help")
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", out).split())
    assert rc == 0
    assert "(default: tp4 when the model fits it, else the first wider TP" in flat
    assert "the layout `pdplan ratio` picks" in flat
    assert flat.count("(default: as --layout's default)") == 2  # prefill and decode layouts
    assert "--prefill-workers <int range> [x>=1] disagg: prefill instances (default: 1)" in flat
    assert "--decode-workers <int range> [x>=1] disagg: decode instances (default: 1)" in flat


def test_estimate_given_layout_that_does_not_fit_says_what_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = _run(
        capsys, "estimate", "--model", "deepseek-v3", "--gpu", "h200", "--layout", "tp4"
    )
    assert rc == 2 and err.count("\n") == 1 and "short by 32.0 GiB (tp4" in err
    assert "--layout tp4: would fit: --layout tp8-ep8 (the smallest TP/EP layout" in err
    args = ("estimate", "--model", "llama-3.1-70b", "--gpu", "h100", "--mode", "disagg")
    rc, _, err = _run(capsys, *args, "--prefill-layout", "tp1")
    assert rc == 2 and "--prefill-layout tp1: would fit: --prefill-layout tp2" in err
    assert "--weight-dtype fp8 on tp1" in err


def test_estimate_kv_shortfall_suggests_fp8_kv(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--model", "llama-3.1-70b", "--gpu", "h100", "--layout", "tp2", "-c", "1")
    rc, _, err = _run(capsys, "estimate", *args, "--isl", "40000", "--osl", "10")
    assert rc == 2 and "holds no request" in err and err.count("\n") == 1
    assert "--layout tp4 (the smallest" in err and "--kv-dtype fp8 on tp2" in err
    d = _json(capsys, "estimate", *args, "--isl", "40000", "--osl", "10", "--kv-dtype", "fp8")
    assert d["layout"] == "tp2"  # the suggestion holds


def test_estimate_nothing_in_a_node_fits_names_a_pipeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("estimate", "--model", "llama-3.1-405b", "--gpu", "l4", "--layout", "tp8")
    rc, _, err = _run(capsys, *args)
    assert rc == 2 and "no TP/EP layout within one 8-GPU node fits llama-3.1-405b" in err
    assert "PP across nodes (tp8-pp8 fits)" in err


# 2. a PCIe box with NVLink pairs: ratio warns, parallel names PCIe, the verdict's criterion

PCIE = "spans beyond the 2-GPU NVLink domain: TP traffic crosses PCIe"


def test_ratio_warns_when_tp_spans_beyond_the_nvlink_domain(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _run(capsys, "ratio", "--model", "qwen2.5-72b", "--gpu", "a100-pcie", "--json")
    d = json.loads(out)
    assert rc == 0 and d["decode_layout"] == "tp4"
    assert f"warning: TP=4 {PCIE}" in err and any(PCIE in w for w in d["warnings"])
    args = ("ratio", "--model", "qwen2.5-72b", "--gpu", "a100-pcie", "--decode-layout", "tp8")
    rc, _, err = _run(capsys, *args, "--prefill-layout", "tp8", "--json")
    assert rc == 0 and err.count(f"TP=8 {PCIE}") == 1  # one warning per distinct layout
    d = _json(capsys, "ratio")  # H100 SXM: TP4 inside the 8-GPU NVLink domain
    assert d["warnings"] == []


def test_parallel_on_a_pcie_box_says_pcie_not_nic(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, "parallel", "--model", "qwen2.5-72b", "--gpu", "a100-pcie", "--gpus", "4")
    notes = " ".join(d["comm_notes"])
    assert f"TP=4 {PCIE}" in notes and "NIC" not in notes and "crosses nodes" not in notes
    tp4 = next(r for r in d["layouts"] if r["layout"] == "tp4")
    assert tp4["tp_beyond_scaleup"] and not tp4["tp_crosses_nodes"]
    ranked = [r for r in d["layouts"] if "decode_tps_per_gpu" in r]
    top = max(ranked, key=lambda r: r["decode_tps_per_gpu"])
    assert d["best_layout"] == top["layout"] == "tp4" and d["agrees"]
    assert "has the highest decode tok/s per GPU of the fitting layouts" in d["verdict"]


def test_parallel_verdict_says_best_by_what(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, "parallel", "--model", "deepseek-v3", "--gpu", "h200")
    assert not d["agrees"] and "is best" not in d["verdict"]
    crit = "has the highest decode tok/s per GPU of the fitting layouts with TP inside one 8-GPU"
    assert crit in d["verdict"]
    seed = next(r for r in d["layouts"] if r["layout"] == d["seed_rule"]["layout"])
    best = next(r for r in d["layouts"] if r["layout"] == d["best_layout"])
    x = seed["decode_tps_per_gpu"] / best["decode_tps_per_gpu"]
    assert x < 1 and f"reaches {x:.2f}x {d['best_layout']}'s decode tok/s per GPU" in d["verdict"]


# 3. a prompt longer than the token budget spans iterations


def test_ratio_note_for_a_prompt_longer_than_the_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = _json(capsys, "ratio", "--model", "qwen2.5-72b", "--gpu", "a100-pcie")
    note = next(n for n in d["notes"] if n.startswith("P at load"))
    assert "a 4000-token prompt in chunks: it spans 2 iterations of the engine's 2048-token" in note
    assert "of 4000 tokens" not in note and "no step's weights read is shared" in note
    d = _json(capsys, "ratio")  # H100: an 8192-token budget holds two 4000-token prompts
    note = next(n for n in d["notes"] if n.startswith("P at load"))
    assert "the engine's token budget holds 2 prompts of 4000 tokens" in note


# 4. CP names the --context it needs


def test_parallel_cp_layout_names_the_context_it_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("parallel", "--model", "llama-3.1-70b", "--gpu", "h100", "--layout", "tp4-cp2")
    rc, _, err = _run(capsys, *args)
    assert rc == 2 and err.count("\n") == 1
    assert "CP=2 at --context 8192 gains nothing" in err and "--context >= 32768" in err
    assert _json(capsys, *args, "--context", "32768")["comm"]["layout"] == "tp4-cp2"


# 5. --tpot is in seconds


@pytest.mark.parametrize(("tpot", "meant"), [("50", "0.05"), ("200", "0.2"), ("10.5", "0.0105")])
def test_ratio_tpot_in_milliseconds_is_refused(
    capsys: pytest.CaptureFixture[str], tpot: str, meant: str
) -> None:
    rc, out, err = _run(capsys, "ratio", "--tpot", tpot)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: --tpot is in seconds: did you mean {meant}?")


def test_ratio_tpot_up_to_ten_seconds_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    assert _json(capsys, "ratio", "--tpot", "10")["tpot_s"] == 10.0
