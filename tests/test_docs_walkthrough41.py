"""README and docs/simulate-outputs.md claims that tests/test_docs_claims24.py leaves unchecked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pdplan.catalog.models import list_models
from pdplan.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = " ".join((ROOT / "README.md").read_text().split())
OUTPUTS = " ".join((ROOT / "docs" / "simulate-outputs.md").read_text().split())


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert main([*args, "--json"]) == 0, args
    out: dict = json.loads(capsys.readouterr().out)  # type: ignore[type-arg]
    return out


def test_the_example_comments_hold(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--decode-tps 2000 # seed example A -> 2:1" in README
    r = _json(capsys, "ratio", "--isl", "4000", "--osl", "500", "--prefill-tps", "8000",
              "--decode-tps", "2000")  # fmt: skip
    assert r["ratio_str"] == "2:1"
    assert "--tokens 4000 # 1.31 GB, not 600 MB" in README
    kv = _json(capsys, "kv", "--model", "llama-3.1-70b", "--tokens", "4000")
    assert round(kv["bytes"] / 1e9, 2) == 1.31
    assert kv["seed"]["claimed_bytes"] == 600e6


def test_kv_paths_the_readme_names_are_the_ones_kv_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = re.search(r"\(`--path`: `(\w+)`, the default, `(\w+)` or `(\w+)`\)", README)
    assert said, "README's kv row no longer names the --path values"
    times = {}
    for path in said.groups():
        kv = _json(capsys, "kv", "--model", "llama-3.1-70b", "--tokens", "4000", "--path", path)
        assert kv["path"] == path
        times[path] = kv["time_s"]
    default = _json(capsys, "kv", "--model", "llama-3.1-70b", "--tokens", "4000")
    assert default["path"] == said.group(1)
    assert times["nvlink"] < times["nic"]


def test_every_preset_family_is_named_in_the_readme_model_list() -> None:
    listed = README.split("Models: ", 1)[1].split("any HF id of those", 1)[0].lower()
    for key in ("kimi-k2.7-code", "nemotron-3.5-lightning-30b-a3b"):
        assert key in list_models()
    assert "k2.7-code" in listed
    assert "nemotron-3.5 lightning" in listed


@pytest.mark.parametrize(
    ("deployment", "gate", "kind"),
    [
        ("tp8-dp8-ep8x1", ["--adp-balance", "10"], "balance"),
        ("tp4x1", ["--batch-wait", "5:0.5"], "batch"),
    ],
)
def test_ctx_gates_carry_the_five_documented_keys(
    capsys: pytest.CaptureFixture[str], deployment: str, gate: list[str], kind: str
) -> None:
    assert "every gate has all five keys" in OUTPUTS
    model = "deepseek-v3" if kind == "balance" else "llama-3.1-70b"
    s = _json(capsys, "simulate", "--model", model, "--gpu", "h200", "--engine", "trtllm",
              "--deployment", deployment, *gate,
              "--workload", "poisson:rate=2,n=20,isl=500,osl=20")  # fmt: skip
    (g,) = s["ctx_gates"].values()
    assert set(g) == {"kind", "timeout_steps", "ranks", "wait_steps", "tokens"}
    assert g["kind"] == kind
    if kind == "balance":  # the DP ranks and WAIT (default 10); no token threshold
        assert (g["ranks"], g["wait_steps"], g["tokens"]) == (8, 10, 0)
    else:  # one rank, no wait; RATIO x max_num_tokens
        assert (g["ranks"], g["wait_steps"]) == (1, 0)
        assert g["tokens"] > 0


def test_the_slo_block_has_the_keys_the_doc_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert "targets (`ttft_s`, `tpot_s`) and `attainment`" in OUTPUTS
    wl = "poisson:rate=2,n=10,isl=200,osl=10"
    s = _json(capsys, "simulate", "--model", "llama-3.1-8b", "--gpu", "h100",
              "--deployment", "tp1x1", "--workload", wl)  # fmt: skip
    assert set(s["slo"]) == {"ttft_s", "tpot_s", "attainment"}
