"""Black-box round 13: --batch-wait / --adp-balance on a deployment without aggregated pools
say so; unknown --kv-dtype lists only KV-cache dtypes ("an int8"); --map without time= names
the timestamp column left unread; explicitly empty option values are refused; the overload
hint of a role in several pools names the busiest pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.cli import main

_SMALL = "poisson:rate=5,n=20,isl=100,osl=5"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(list(args))
    return rc, capsys.readouterr().err


def _sim(capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str]:
    return _run(capsys, "simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--json", *more)


@pytest.mark.parametrize("gate", [["--batch-wait", "5:0.5"], ["--adp-balance", "5"]])
def test_context_gates_on_a_pd_deployment_say_it_has_no_aggregated_pool(
    capsys: pytest.CaptureFixture[str], gate: list[str]
) -> None:
    rc, err = _sim(
        capsys, "--deployment", "1P:tp1+1D:tp1", "--engine", "trtllm", *gate, "--workload", _SMALL
    )
    # was "no aggregated pool has a layout without dpN": as if an aggregated pool were there
    assert rc == 2
    assert "this deployment has no aggregated pool, only prefill and decode pools" in err
    assert f"drop {gate[0]}" in err and "dpN" not in err


@pytest.mark.parametrize("cmd", ["simulate", "estimate", "ratio"])
@pytest.mark.parametrize("dtype", ["fp8_e5m3", "int4", "bogus"])
def test_an_unknown_kv_dtype_lists_only_kv_cache_dtypes(
    capsys: pytest.CaptureFixture[str], cmd: str, dtype: str
) -> None:
    args = ["--deployment", "tp1", "--workload", _SMALL] if cmd == "simulate" else []
    rc, err = _run(capsys, cmd, "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", dtype,
                   *args)  # fmt: skip
    assert rc == 2 and f"unknown KV cache dtype {dtype!r}; use one of bf16, fp16, fp8" in err
    listed = err.split("use one of", 1)[1]
    for weight_only in ("int4", "int8_wo", "w4a8", "mxfp4", "fp32"):
        assert weight_only not in listed


@pytest.mark.parametrize("cmd", ["simulate", "estimate", "ratio", "kv"])
@pytest.mark.parametrize(
    ("given", "read"), [("fp8_e5m2", "fp8"), ("FP8_E4M3", "fp8"), ("auto", "")]
)
def test_engine_spellings_of_a_kv_dtype_are_read(
    capsys: pytest.CaptureFixture[str], cmd: str, given: str, read: str
) -> None:
    # vLLM / SGLang's --kv-cache-dtype values: fp8_e4m3 / fp8_e5m2 are fp8 (same size), auto is
    # the checkpoint's (llama-3.1-8b: bf16): the same output as the catalog's name / no option
    args = ["--deployment", "tp1", "--workload", _SMALL] if cmd == "simulate" else []
    args += [] if cmd == "kv" else ["--gpu", "h100"]
    outs = []
    for kv in (["--kv-dtype", given], ["--kv-dtype", read] if read else []):
        assert main([cmd, "--model", "llama-3.1-8b", "--json", *args, *kv]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0]


def test_an_fp8_alias_the_catalog_does_not_know_points_to_the_spellings() -> None:
    from pdplan.catalog.model_parts import kv_dtype_bytes
    from pdplan.errors import ConfigError

    with pytest.raises(ConfigError, match="fp8 is any 8-bit float KV: fp8_e4m3, fp8_e5m2"):
        kv_dtype_bytes("fp8_e5m3")


def test_a_kv_dtype_the_engine_cannot_store_takes_an(capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _sim(capsys, "--deployment", "tp1", "--kv-dtype", "int8", "--workload", _SMALL)
    assert rc == 2 and "vllm cannot store an int8 KV cache" in err


def test_map_without_time_names_the_timestamp_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "azure.csv"
    trace.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"2023-11-16 18:17:0{s}.0000000,100,5\n" for s in range(4))
    )
    rc, err = _sim(capsys, "--deployment", "tp1", "--workload", str(trace),
                   "--map", "input=ContextTokens,output=GeneratedTokens")  # fmt: skip
    # was "the trace has no timestamps", of a file whose TIMESTAMP column --map left unread
    assert rc == 2 and "--map gives no time=, so its timestamp column 'TIMESTAMP'" in err
    assert "add time=TIMESTAMP to --map" in err and "--rate R" in err
    mapped = "input=ContextTokens,output=GeneratedTokens,time=TIMESTAMP"
    rc, err = _sim(capsys, "--deployment", "tp1", "--workload", str(trace), "--map", mapped)
    assert rc == 0


def test_map_without_time_on_a_trace_without_one_says_it_has_none(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trace = tmp_path / "lens.csv"
    trace.write_text("a,b\n100,5\n200,6\n")
    rc, err = _sim(
        capsys, "--deployment", "tp1", "--workload", str(trace), "--map", "input=a,output=b"
    )
    assert rc == 2 and "the trace has no timestamps: give --rate R" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["ratio", "--rates", ""], "--rates '' is empty: give QPS values like 0.5,1,10"),
        (["ratio", "--spec-decode", ""], "--spec-decode '' is empty: give METHOD:K"),
        (["ratio", "--model", " "], "--model ' ' is empty"),
        (["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--spec-decode", ""],
         "--spec-decode '' is empty: give METHOD:K[:ACCEPTANCE], e.g. mtp:3, or none"),
        (["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-dtype", ""],
         "--kv-dtype '' is empty"),
        (["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1",
          "--workload", _SMALL, "--spec-decode", ""], "--spec-decode '' is empty"),
        (["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--deployment", "tp1",
          "--workload", _SMALL, "--weight-dtype", ""], "--weight-dtype '' is empty"),
    ],
)  # fmt: skip
def test_an_explicitly_empty_value_is_refused(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    rc, err = _run(capsys, *args)
    # each ran as if the option were left out (--spec-decode '' as no speculative decoding)
    assert rc == 2 and said in err


def test_ratio_spec_decode_none_runs(capsys: pytest.CaptureFixture[str]) -> None:
    # 'none' (parse_spec's no-drafting value) crashed the default decode layout's pick
    rc, err = _run(capsys, "ratio", "--spec-decode", "none", "--rates", "1", "--json")
    assert rc == 0 and "internal error" not in err


@pytest.mark.parametrize(
    ("deployment", "workload", "said"),
    [
        ("tp1@h100+tp1@a10", "poisson:rate=40,n=200,isl=2000,osl=100",
         "the aggregated pool tp1@a10 is saturated"),
        ("1P:tp1@a10+1P:tp1+1D:tp1", "poisson:rate=40,n=200,isl=4000,osl=20",
         "the prefill pool 1P:tp1@a10 is saturated"),
    ],
)  # fmt: skip
def test_the_overload_hint_names_the_busiest_of_a_roles_pools(
    capsys: pytest.CaptureFixture[str], deployment: str, workload: str, said: str
) -> None:
    rc, err = _sim(capsys, "--deployment", deployment, "--workload", workload)
    # was "the aggregated instances are the busiest (busy 55 % ...): add aggregated instances",
    # averaged over an idle H100 and a saturated A10
    assert rc == 0 and said in err and "add" in err and "instances to that pool" in err
