"""`pdplan estimate`: --rounds inf is the steady state (3), layout warnings as ratio gives them,
also in --json (4), CP on short prompts (5), a request whose KV no layout holds (6), and the
default layout's KV room (2)."""

from __future__ import annotations

import json
import math

import pytest

from pdplan.cli import main

pytest.importorskip("pdplan.perf.costmodel")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[dict, str]:
    rc, out, err = _run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out), err


# 2. the default layout leaves KV room for a decode batch


def test_default_layout_is_not_kv_starved(capsys: pytest.CaptureFixture[str]) -> None:
    # tp4 of Llama-3.1-70B on A100-40GB holds 11,759 tokens: 2 requests of 4,500
    d, _ = _json(capsys, "estimate", "--gpu", "a100-40gb")
    assert d["layout"] == "tp8" and d["memory"]["kv_capacity_tokens"] > 16 * 4500
    assert d["layout_note"].startswith("tp4 leaves KV room for only 2 requests of 4,500 tokens")
    assert "equals its weight read" in d["layout_note"] and d["layout_note"].endswith("using tp8")
    r, _ = _json(capsys, "ratio", "-g", "a100-40gb")
    assert (r["prefill_layout"], r["decode_layout"]) == ("tp4", "tp8")  # a prompt fits tp4
    assert r["decode_batch"] > 16 and any(n.startswith("tp4 leaves KV") for n in r["notes"])


def test_default_layout_of_the_quick_start_is_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d, _ = _json(capsys, "estimate")
    assert d["layout"] == "tp4" and "layout_note" not in d
    r, _ = _json(capsys, "ratio")
    assert (r["prefill_layout"], r["decode_layout"], r["ratio_str"]) == ("tp4", "tp4", "3:2")


# 3. --rounds inf


def test_rounds_inf_is_the_steady_state(capsys: pytest.CaptureFixture[str]) -> None:
    for mode in ("agg", "disagg"):
        inf, _ = _json(capsys, "estimate", "--mode", mode, "--rounds", "inf")
        big, _ = _json(capsys, "estimate", "--mode", mode, "--rounds", "1e12")
        e = inf["estimate"]
        assert e["ttft_ms"] is not None and math.isfinite(e["ttft_ms"]), mode
        assert e["ttft_ms"] == pytest.approx(big["estimate"]["ttft_ms"], rel=1e-9)
        assert inf["output_tokens_per_s_per_gpu"] > 0
    rc, out, _ = _run(capsys, "estimate", "--rounds", "inf")
    assert rc == 0 and "nan" not in out


# 4. TP across nodes is warned, on stderr and in the JSON


def test_tp_across_nodes_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    d, err = _json(
        capsys, "estimate", "--model", "deepseek-v3", "--gpu", "h200", "--layout", "tp64"
    )
    assert "TP=64 crosses nodes" in err
    assert any("TP=64 crosses nodes" in w for w in d["warnings"])
    d, err = _json(capsys, "estimate")
    assert d["warnings"] == [] and "warning" not in err


def test_context_warning_is_in_the_json_too(capsys: pytest.CaptureFixture[str]) -> None:
    d, err = _json(capsys, "estimate", "--model", "llama-3.1-8b", "--isl", "140000", "-c", "1")
    assert "131,072-token context" in err
    assert any("131,072-token context" in w for w in d["warnings"])


# 5. CP on prompts shorter than parallel's CP_MIN_CONTEXT


def test_cp_on_short_prompts_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    from pdplan.parallel import CP_MIN_CONTEXT

    d, err = _json(capsys, "estimate", "--layout", "tp8-cp2")
    assert f"CP=2 at 4000 tokens gains nothing: below {CP_MIN_CONTEXT} tokens" in err
    assert any("gains nothing" in w for w in d["warnings"])
    long_isl = str(CP_MIN_CONTEXT)
    d, err = _json(capsys, "estimate", "--layout", "tp8-cp2", "--isl", long_isl, "-c", "4")
    assert "gains nothing" not in err and not any("gains nothing" in w for w in d["warnings"])


# 6. the model fits, one request's KV does not


def test_a_request_no_layout_holds_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "estimate", "--isl", "1000000000")
    assert rc == 2 and out == ""
    assert "llama-3.1-70b's weights fit, but a request (ISL + OSL) of 1,000,000,500 tokens" in err
    assert "GiB of BF16 KV cache, more than the largest layout up to tp8-pp8 holds" in err
    assert "exceeds llama-3.1-70b's 131,072-token context window" in err
    assert "no TP/EP layout within one 8-GPU node fits" not in err
    rc, _, err = _run(capsys, "estimate", "--isl", "1000000000", "--layout", "tp4")
    assert rc == 2 and "weights fit, but a request of 1,000,000,500 tokens needs" in err, err
    assert "no TP/EP layout within one 8-GPU node fits" not in err
