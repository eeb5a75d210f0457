"""CLI: `pdplan simulate`'s report, help, warnings and messages as a user meets them (run through
main(), as a user would)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pdplan.cli import main

MOONCAKE = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "traces"
    / "mooncake_fast25"
    / "synthetic_trace.jsonl"
)


def _sim(
    capsys: pytest.CaptureFixture[str], deployment: str, workload: str, *more: str
) -> tuple[int, str, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
               "--deployment", deployment, "--workload", workload, *more])  # fmt: skip
    out, err = capsys.readouterr()
    return rc, out, err


def _row(out: str, name: str) -> list[str]:
    """The cells of the table row whose first cell is `name`."""
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no row {name!r} in\n{out}")


def test_the_table_states_the_slos_and_each_instances_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _sim(capsys, "1P:tp1+2D:tp1", "poisson:rate=3,n=120,isl=1024,osl=32")
    assert rc == 0, err
    assert _row(out, "SLO attainment")[1].endswith("(TTFT <= 2 s and TPOT <= 100 ms)")
    assert "within both SLOs" in _row(out, "goodput_rps")[1]
    for head in ("utilisation", "queued", "running", "KV used mean / peak",
                 "prefill queue p50 / p99", "KV transfer p50 / p99"):  # fmt: skip
        assert head in out
    prefill, decode = _row(out, "prefill0:tp1"), _row(out, "decode1:tp1")
    assert 0 < float(prefill[1]) < 1 and 0 < float(decode[1]) <= 1  # utilisation
    mean, peak = (float(x.rstrip(" %")) for x in decode[4].split(" / "))
    assert 0 < mean <= peak <= 100  # KV pool in use, %
    assert re.fullmatch(r"\S+ m?s / \S+ m?s", prefill[5]) and prefill[6] == "-"
    assert decode[5] == "-" and re.fullmatch(r"\S+ [mu]?s / \S+ [mu]?s", decode[6])
    rc, out, _ = _sim(capsys, "tp1", "poisson:rate=3,n=60,isl=512,osl=16",
                      "--slo-ttft", "0.5", "--slo-tpot", "0.05")  # fmt: skip
    assert _row(out, "SLO attainment")[1].endswith("(TTFT <= 500 ms and TPOT <= 50 ms)")
    assert "queue p50 / p99" in out and "KV transfer" not in out  # aggregated: no transfers


def test_many_instances_are_shown_per_pool(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _sim(capsys, "12P:tp1+4D:tp1", "poisson:rate=6,n=200,isl=2048,osl=32")
    assert rc == 0, err
    assert "pools (means per instance)" in out
    prefill, decode = _row(out, "12 x prefill:tp1"), _row(out, "4 x decode:tp1")
    assert 0 < float(prefill[1]) < 1 and 0 < float(decode[1]) <= 1
    assert "prefill11" not in out
    assert max(len(line) for line in out.splitlines()) <= 160


def _help_of(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "400")  # no option text cut short
    assert main(["simulate", "--help"]) == 0
    text = re.sub(r"[│╭╮╰╯─]", " ", capsys.readouterr().out)
    return re.sub(r"\s+", " ", text)


def _option_help(text: str, option: str) -> str:
    m = re.search(rf"{option} <[^>]*>(.*?)(?= (?:\* )?--[a-z-]+ <|$)", text)
    assert m, f"no {option} in --help"
    return m.group(1)


def test_help_documents_closed_loops_model_ids_chunk_and_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _help_of(capsys, monkeypatch)
    workload = _option_help(text, "--workload")
    assert "poisson:rate=R,n=N" in workload and "closed:c=C,n=N" in workload
    assert "think=S" in workload and "isl=" in workload and "osl=" in workload
    model = _option_help(text, "--model")
    assert "Hugging Face id" in model and "config.json" in model
    chunk = _option_help(text, "--chunk")
    assert "aggregated instance" in chunk and "prefill instance" in chunk
    assert "decode instances ignore it" in chunk
    assert "JSON" in _option_help(text, "--json")


def test_the_model_may_be_a_hugging_face_id_or_a_config_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 8192,
    }))  # fmt: skip
    for model in ("meta-llama/Llama-3.1-8B", str(config)):
        rc = main(["simulate", "--model", model, "--gpu", "h100-sxm", "--deployment", "tp1",
                   "--workload", "poisson:rate=2,n=20,isl=256,osl=16", "--json"])  # fmt: skip
        out, err = capsys.readouterr()
        assert rc == 0, err
        assert json.loads(out)["finished"] == 20


@pytest.mark.parametrize(
    ("deployment", "message"),
    [
        ("2P:tp4+2D", "pool '2D' has no layout: write it as 2D:tp8"),
        ("2P:tp4+2D:", "pool '2D' has no layout: write it as 2D:tp8"),
        ("2p:tp4+2d@H200-SXM", "pool '2d' has no layout: write it as 2d:tp8@H200-SXM"),
        ("2P@h200-sxm+1D:tp4", "pool '2P' has no layout: write it as 2P:tp8@h200-sxm"),
        ("2P:TQ4+2D:tp8", "cannot read layout 'TQ4': cannot read layout part 'TQ4'"),
    ],
)
def test_a_pool_without_a_layout_is_named_as_typed(
    capsys: pytest.CaptureFixture[str], deployment: str, message: str
) -> None:
    rc, _, err = _sim(capsys, deployment, "poisson:rate=1,n=10,isl=256,osl=16")
    assert rc != 0 and message in err and "Traceback" not in err
    assert "layout part '2" not in err.lower()  # the old echo of '2d' as a layout part


def test_an_overloaded_open_loop_is_flagged_with_its_saturated_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _sim(capsys, "tp1", "poisson:rate=30,n=600,isl=2000,osl=200", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 600  # the warning is on stderr only
    # queues in front of the first tokens: their rate is what it reports, named as such (in a
    # decode-bound run completions come slower still)
    m = re.search(r"warning: overloaded: requests arrive at ([\d.]+) req/s but first tokens "
                  r"come at only ([\d.]+) req/s", err)  # fmt: skip
    assert m and float(m.group(2)) < 0.9 * float(m.group(1))
    assert "the aggregated instances are saturated" in err and "(about tp1x" in err
    _, _, err = _sim(capsys, "1P:tp1+2D:tp1", "poisson:rate=20,n=400,isl=8000,osl=8")
    assert "the prefill instances are saturated" in err
    assert re.search(r"add prefill instances \(about \d+P:tp1 instead of 1P:tp1", err)
    _, _, err = _sim(capsys, "1P:tp1+1D:tp1", "poisson:rate=20,n=1000,isl=200,osl=2000")
    assert "the decode instances are saturated" in err and "D:tp1 instead of 1D:tp1" in err


@pytest.mark.parametrize(
    ("deployment", "workload"),
    [
        ("1P:tp1+2D:tp1", "poisson:rate=3,n=300,isl=1024,osl=64"),  # keeps up
        ("tp1", "poisson:rate=50,n=100,isl=100,osl=lognormal:1000:1.0"),  # short, long outputs
        ("tp1", "closed:c=300,n=900,isl=500,osl=50"),  # a closed loop waits for the cluster
    ],
)
def test_no_overload_warning_when_the_cluster_keeps_up_or_the_loop_is_closed(
    capsys: pytest.CaptureFixture[str], deployment: str, workload: str
) -> None:
    rc, _, err = _sim(capsys, deployment, workload, "--json")
    assert rc == 0 and "overloaded" not in err


@pytest.mark.skipif(not MOONCAKE.exists(), reason="shared Mooncake trace not present")
def test_the_audited_mooncake_overload_is_flagged(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["simulate", "--model", "llama-3.1-70b", "--gpu", "h200", "--deployment",
               "2P:tp4+2D:tp8", "--workload", str(MOONCAKE), "--routing", "prefix",
               "--prefix-cache", "auto", "--json"])  # fmt: skip
    _, err = capsys.readouterr()
    assert rc == 0 and "warning: overloaded" in err
    assert "the prefill instances are saturated" in err and "instead of 2P:tp4" in err


def test_the_context_warning_counts_only_simulated_requests(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = tmp_path / "rows.csv"
    rc, out, err = _sim(
        capsys, "tp1", "poisson:rate=2,n=400,isl=uniform:100000:160000,osl=16",
        "--duration", "20", "--requests-out", str(rows), "--json",
    )  # fmt: skip
    assert rc == 0, err
    simulated = json.loads(out)["requests"]
    assert 10 < simulated < 100  # --duration cut most of the 400
    t = np.genfromtxt(rows, delimiter=",", names=True)
    sent = np.isfinite(t["arrival"])  # the rows of requests --duration cut have no arrival
    over = int(((t["inp"] + t["out"])[sent] > 131_072).sum())
    assert sent.sum() == simulated and 0 < over < simulated
    assert f"warning: {over} requests (up to" in err


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (("--format", "azure"), "--format applies only to a trace file"),
        (("--map", "input=a,output=b"), "--map applies only to a trace file"),
        (("--skip-bad",), "--skip-bad applies only to a trace file"),
        (("--rate", "3"), "--rate applies only to a trace file"),
        (("--clients", "2"), "--clients applies only to a trace file"),
        (("--format", "azure", "--map", "input=a,output=b"), "--format, --map apply only to"),
    ],
)
def test_trace_options_on_a_synthetic_spec_are_named_as_typed(
    capsys: pytest.CaptureFixture[str], more: tuple[str, ...], message: str
) -> None:
    rc, _, err = _sim(capsys, "tp4", "poisson:rate=2,n=10,isl=100,osl=10", *more)
    assert rc != 0 and message in err and "Traceback" not in err
    assert "--fmt" not in err and "--mapping" not in err


def test_a_missing_output_length_is_noted(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _sim(capsys, "tp1", "poisson:rate=4,n=100,isl=2000", "--json")
    assert rc == 0 and json.loads(out)["finished"] == 100
    assert "note: the poisson spec gives no osl: every request gets osl=256" in err
    rc, out, err = _sim(capsys, "tp1", "closed:c=4,n=40", "--json")
    assert rc == 0 and "gives no isl or osl" in err and "isl=1024" in err
    rc, _, err = _sim(capsys, "tp1", "poisson:rate=4,n=100,isl=2000,osl=50", "--json")
    assert rc == 0 and "note" not in err
