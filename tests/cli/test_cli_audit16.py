"""CLI: a black-box audit's findings (session 16), each as the user met it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.cli import main

HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,"
    "osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
    "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
)
ROW = "ok,x,vllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1024,128,,,8,1,1,,1,1,100,8\n"
SIM = ("simulate", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--deployment", "tp1")
LOAD = ("--workload", "poisson:rate=2,n=20,isl=100,osl=8")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc: int, err: str, *parts: str) -> None:
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    for p in parts:
        assert p in err, (p, err)


def test_accuracy_refuses_rows_output_over_its_measured_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "m.csv"
    f.write_text(HEADER + ROW)
    rc, _, err = _run(capsys, "accuracy", "--measured", str(f), "--rows", str(f))
    _one_line_error(rc, err, "--rows", "is the --measured file")
    assert f.read_text() == HEADER + ROW  # the input is intact


def test_convert_refuses_to_write_over_its_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = tmp_path / "t.jsonl"
    text = '{"timestamp": 0, "input_length": 10, "output_length": 2}\n'
    src.write_text(text)
    same = tmp_path / "sub" / ".." / "t.jsonl"
    (tmp_path / "sub").mkdir()
    rc, _, err = _run(capsys, "workload", "convert", str(src), str(same))
    _one_line_error(rc, err, "is the SRC file")
    assert src.read_text() == text


@pytest.mark.parametrize(
    "argv",
    [
        (*SIM, *LOAD, "--requests-out", "/proc/pdplan-x.csv"),
        (*SIM, *LOAD, "--chrome-trace", "/proc/pdplan-x.json"),
        ("workload", "synth", "-o", "/proc/pdplan-x.jsonl", "-n", "3"),
    ],
)
def test_an_output_the_file_system_refuses_fails_before_any_work(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    rc, out, err = _run(capsys, *argv)
    _one_line_error(rc, err, "cannot write")
    assert out == ""  # nothing was simulated or summarised first


def test_an_output_under_a_file_says_the_parent_is_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "f.jsonl").write_text("")
    bad = tmp_path / "f.jsonl" / "r.csv"
    rc, _, err = _run(capsys, *SIM, *LOAD, "--requests-out", str(bad))
    _one_line_error(rc, err, "is a file, not a folder")


def test_user_text_is_printed_as_given_not_as_markup_or_emoji(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gpus = tmp_path / "g.yaml"
    gpus.write_text('"[/red]gpu":\n  base: h100-sxm\n')
    rc, out, err = _run(capsys, "--gpu-file", str(gpus), "gpus")
    assert rc == 0 and "[/red]gpu" in out and "internal error" not in err
    rc, out, _ = _run(capsys, "workload", "synth", "-o", str(tmp_path / "s.jsonl"), "-n", "5",
                      "--input", "lognormal:100:0.5:10")  # fmt: skip
    assert rc == 0


def test_synth_warning_keeps_colon_codes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, err = _run(capsys, "workload", "synth", "-o", str(tmp_path / "s.jsonl"), "-n", "5",
                        "--input", "lognormal:100:0.5:10")  # fmt: skip
    assert rc == 0 and "(the MAX of lognormal:100:0.5:10)" in out + err  # not 'lognormal💯0.5:10'


@pytest.mark.parametrize(
    ("more", "part"),
    [
        (("--rate", "1e-300"), "timestamps would overflow"),
        (("--rate", "1e300"), "req/s cap"),
        (("--seed", "-1"), "seed=-1 must be a whole number >= 0"),
    ],
)
def test_synth_refuses_rates_and_seeds_it_cannot_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, more: tuple[str, ...], part: str
) -> None:
    out = tmp_path / "s.jsonl"
    rc, _, err = _run(capsys, "workload", "synth", "-o", str(out), "-n", "3", *more)
    _one_line_error(rc, err, part)
    assert not out.exists()


def test_a_map_key_given_twice_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text('{"timestamp": 5, "input_length": 10, "output_length": 2}\n')
    m = "input=input_length,output=output_length,input=timestamp"
    rc, _, err = _run(capsys, "workload", "inspect", str(f), "--map", m)
    _one_line_error(rc, err, "--map gives input twice")


def test_a_metrics_dump_without_known_metrics_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "prom.txt"
    f.write_text('# HELP x\nvllm:some_gauge{a="b"} 3\n')
    rc, _, err = _run(capsys, "workload", "inspect", str(f), "--format", "prometheus")
    _one_line_error(rc, err, "no request-length, latency or counter metrics")


def test_ratio_refuses_rho_that_numbers_mode_would_ignore(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ("ratio", "--isl", "1000", "--osl", "100", "--prefill-tps", "5000",
            "--decode-tps", "500")  # fmt: skip
    rc, _, err = _run(capsys, *base, "--rho", "0.3")
    _one_line_error(rc, err, "--rho only applies with --qps")
    rc, out, _ = _run(capsys, *base, "--rho", "0.3", "--qps", "10", "--json")
    assert rc == 0 and json.loads(out)["rho"] == 0.3


@pytest.mark.parametrize(
    ("more", "part"),
    [
        (("--slo-ttft", "2000"), "--slo-ttft is in seconds: did you mean 2?"),
        (("--slo-tpot", "50"), "--slo-tpot is in seconds: did you mean 0.05?"),
        (("--switch-cost", "3"), "--switch-cost only applies with --switch"),
    ],
)
def test_simulate_refuses_ms_slos_and_ignored_switch_cost(
    capsys: pytest.CaptureFixture[str], more: tuple[str, ...], part: str
) -> None:
    rc, _, err = _run(capsys, *SIM, *LOAD, *more)
    _one_line_error(rc, err, part)


def test_simulate_says_when_gpu_is_unused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, "simulate", "--model", "qwen3-8b", "--gpu", "mi300x",
                      "--deployment", "tp1@h100-sxm", *LOAD, "--json")  # fmt: skip
    assert rc == 0 and "--gpu mi300x is not used: every pool names its own GPU" in err


def test_e2e_is_never_shorter_than_ttft(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, *SIM, "--workload", "poisson:rate=2,n=20,isl=10,osl=1", "--json")
    s = json.loads(out)
    assert rc == 0 and s["ttft_s"]["p50"] > 0
    for q in ("mean", "p50", "p99"):
        assert s["e2e_s"][q] >= s["ttft_s"][q]


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (("ratio", "--isl", "1.5", "--osl", "0.5"), "ISL 1.5, OSL 0.5 tokens"),
        (("kv", "-n", "1"), "= 0.000328 GB"),
    ],
)
def test_small_values_are_not_rounded_to_zero(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], shown: str
) -> None:
    rc, out, _ = _run(capsys, *argv)
    assert rc == 0 and shown in out


def test_inspect_windows_show_starts_at_their_resolution(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text("".join(f'{{"timestamp": {t}, "input_length": 10, "output_length": 2}}\n'
                         for t in (0, 1, 2, 3)))  # fmt: skip
    rc, out, _ = _run(capsys, "workload", "inspect", str(f), "--window", "1ms")
    assert rc == 0 and "0.001" in out and "0.002" in out and "span" in out and "0.003 s" in out


@pytest.mark.parametrize(
    ("cell", "part"),
    [("fast", "silicon_ttft_ms='fast' is not a number"), ("1e308", "positive number of ms")],
)
def test_accuracy_names_the_column_of_an_unusable_latency(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cell: str, part: str
) -> None:
    f = tmp_path / "m.csv"
    f.write_text(HEADER + ROW + ROW.replace("ok,", "bad,").replace(",100,8\n", f",{cell},8\n"))
    rc, out, _ = _run(capsys, "accuracy", "--measured", str(f), "--json")
    d = json.loads(out)
    assert rc == 0 and d["skipped"] == 1
    assert any(part in s["reason"] for s in d["skipped_reasons"])


@pytest.mark.parametrize(
    ("content", "part"),
    [
        (b"timestamp\tinput_length\toutput_length\n0\t10\t2\n", "tab-separated?"),
        (b"[1, 2, 3]\n", "JSON arrays"),
        (b"\x00\x01\x02\xff\xfe binary\n", "not text (binary bytes)"),
    ],
)
def test_unreadable_trace_headers_say_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, part: str
) -> None:
    f = tmp_path / "t.csv"
    f.write_bytes(content)
    rc, _, err = _run(capsys, "workload", "inspect", str(f))
    _one_line_error(rc, err, "cannot tell the trace format", part)


@pytest.mark.parametrize(
    ("argv", "part"),
    [
        (("models", ""), "empty model name"),
        (("ratio", "--rates", "1,,2"), "--rates '1,,2'"),
        (
            (
                "workload",
                "synth",
                "-o",
                "/tmp/pdplan-never.jsonl",
                "-n",
                "3",
                "--input",
                "99999999999999",
            ),
            "at most 2,147,483,647 tokens",
        ),
    ],
)
def test_empty_or_oversized_values_are_refused(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], part: str
) -> None:
    rc, _, err = _run(capsys, *argv)
    _one_line_error(rc, err, part)


def test_estimate_says_when_a_pool_has_more_instances_than_clients(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _run(capsys, "estimate", "--mode", "disagg", "--prefill-workers", "1000",
                        "--decode-workers", "1", "--json")  # fmt: skip
    d = json.loads(out)
    assert rc == 0 and "--prefill-workers 1,000 for 32 clients" in err
    assert any("sit idle" in w for w in d["warnings"])
