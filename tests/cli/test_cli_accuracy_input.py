"""CLI: accuracy on unspecified rows, an unknown --mode, and --client without --simulate."""

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
LLAMA = "vllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1024,128,,"
ROWS = (
    f"ok,x,{LLAMA},8,1,1,,1,1,100,8\n"
    f"blank-batch,x,{LLAMA},,1,1,,1,1,100,8\n"
    f"zero-batch,x,{LLAMA},0,1,1,,1,1,100,8\n"
    f"blank-tp,x,{LLAMA},8,,1,,1,1,100,8\n"
)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def measured(tmp_path: Path) -> str:
    f = tmp_path / "m.csv"
    f.write_text(HEADER + ROWS)
    return str(f)


@pytest.mark.parametrize("extra", [(), ("--simulate",)])
def test_rows_without_concurrency_or_layout_are_skipped_with_the_reason(
    capsys: pytest.CaptureFixture[str], measured: str, extra: tuple[str, ...]
) -> None:
    rc, out, err = _run(capsys, "accuracy", "--measured", measured, *extra, "--json")
    assert rc == 0 and "internal error" not in err
    d = json.loads(out)
    assert d["predicted"] == 1 and d["skipped"] == 3
    reasons = {s["reason"]: s["rows"] for s in d["skipped_reasons"]}
    assert reasons == {
        "row has no concurrency (batch_size empty or 0 and no silicon_concurrency in its "
        "source)": 2,
        "row has no layout (tp_size empty or 0)": 1,
    }


def test_an_unknown_mode_is_a_one_line_error_naming_the_modes(
    capsys: pytest.CaptureFixture[str], measured: str
) -> None:
    rc, out, err = _run(capsys, "accuracy", "--measured", measured, "--mode", "bogus")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: --mode must be agg or disagg") and "'bogus'" in err


@pytest.mark.parametrize("client", ["random", "fixed"])
def test_client_without_simulate_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], measured: str, client: str
) -> None:
    rc, out, err = _run(capsys, "accuracy", "--measured", measured, "--client", client)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "--client only applies with --simulate" in err


def test_auto_client_and_simulate_default_still_run(
    capsys: pytest.CaptureFixture[str], measured: str
) -> None:
    rc, out, _ = _run(capsys, "accuracy", "--measured", measured, "--client", "auto", "--json")
    assert rc == 0 and json.loads(out)["method"] == "estimate"
    rc, out, _ = _run(capsys, "accuracy", "--measured", measured, "--simulate", "--json")
    assert rc == 0 and json.loads(out)["method"] == "simulate (fixed client)"
