"""Black-box round 15: --transit-dtype takes KV dtypes (engines' spellings too) and lists
only those; the overload hint spells a default-GPU pool with its @gpu beside named ones;
`models --json` names the in-window KV figure for what it is; ratio names --rates in its
refusal and says when --osl replaces a trace's outputs; kv's seed line names the seed's
example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_transit_dtype_lists_only_what_a_kv_cache_can_be_sent_as(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = _run(capsys, "kv", "--transit-dtype", "int8_wo")
    # was "unknown dtype 'int8_wo'; known: bf16, fp16, fp32, fp4, fp8, int4, int8, int8_wo, ..."
    assert rc != 0
    said = "unknown transit dtype 'int8_wo'; send the KV as one of bf16, fp16, fp8, int8, fp4, int4"
    assert said in err
    assert "w4a8" not in err and "fp32" not in err


def test_transit_dtype_takes_an_engines_spelling(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "kv", "--transit-dtype", "fp8_e4m3", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["transit_dtype"] == "fp8" and data["bytes"] == 4000 * 163_840


def test_the_overload_hint_spells_the_default_gpu_beside_named_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = _run(
        capsys, "simulate", "--model", "llama-3.1-8b", "--gpu", "H100", "--json",
        "--deployment", "1P:tp1@a10+1P:tp1+1D:tp1",
        "--workload", "poisson:rate=40,n=200,isl=4000,osl=20",
    )  # fmt: skip
    # was "the other prefill pools: 1P:tp1 busy 22 %": which GPU, beside 1P:tp1@a10?
    assert rc == 0 and "the prefill pool 1P:tp1@a10 is saturated" in err
    assert "the other prefill pools: 1P:tp1@h100 busy" in err


def test_models_json_names_the_in_window_kv_figure(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "models", "llama-3.1-8b", "--json")
    row = json.loads(out)["models"][0]
    # no sliding window: both figures are 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B
    assert rc == 0 and row["kv_bytes_per_token_in_window_bf16"] == 131_072
    assert row["kv_bytes_per_token_long_bf16"] == 131_072


@pytest.mark.parametrize(
    ("rates", "said"),
    [("0,1", "--rates '0,1': 0 is no positive rate (QPS > 0)"),
     ("1,nan,-2", "--rates '1,nan,-2': nan, -2 are no positive rates (QPS > 0)")],
)  # fmt: skip
def test_ratio_names_the_rates_option_and_its_bad_values(
    capsys: pytest.CaptureFixture[str], rates: str, said: str
) -> None:
    rc, _, err = _run(capsys, "ratio", "--rates", rates)
    assert rc != 0 and said in err  # was "rate 0.0 must be a positive number"


def test_ratio_says_when_osl_replaces_a_traces_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n0,1000,300\n1,2000,100\n")
    rc, out, err = _run(capsys, "ratio", "--lengths", str(trace), "--osl", "50", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["osl"] == 50
    assert "--osl 50 replaces its output lengths (mean 200)" in data["notes"][0]
    rc, out, _ = _run(capsys, "ratio", "--lengths", str(trace), "--json")
    data = json.loads(out)
    assert data["osl"] == 200 and "replaces" not in data["notes"][0]


def test_kv_seed_line_says_it_is_the_seeds_4000_token_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = _run(capsys, "kv", "--tokens", "1000")
    # the comparison is the seed's own example, whatever --tokens is
    assert rc == 0 and "seed s5 says a 4,000-token FP16 prompt is ~600 MB" in out


def test_a_vllm_budget_under_its_running_sequences_is_refused_as_vllm_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1",
            "--workload", "poisson:rate=2,n=20,isl=1000,osl=50", "--json",
            "--chunk", "512"]  # fmt: skip
    # vLLM's SchedulerConfig refuses max_num_batched_tokens < max_num_seqs (1024 on H100);
    # simulated, every step's budget went to the running decodes and new prompts starved
    rc, _, err = _run(capsys, *base)
    assert rc != 0 and "--chunk 512 is under the 1024 running sequences vLLM allows" in err
    rc, _, err = _run(capsys, *base, "--max-batch", "512")
    assert rc == 0, err
    rc, _, err = _run(capsys, *base, "--engine", "sglang")  # SGLang caps prefill steps only
    assert rc == 0, err


def test_the_overload_rate_says_it_leaves_the_dropped_requests_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _run(
        capsys, "simulate", "--model", "llama-3.1-8b", "--gpu", "a10", "--deployment", "tp1",
        "--workload", "poisson:rate=20,n=400,isl=lognormal:8000:1.0,osl=200", "--json",
    )  # fmt: skip
    dropped = json.loads(out)["dropped"]
    # was "requests arrive at 18 req/s" of a poisson:rate=20 workload, without saying why
    assert rc == 0 and dropped > 0
    assert f"overloaded: the requests not dropped ({dropped:,} were) arrive at" in err
