"""CLI: `pdplan accuracy` reports the file's noise floor (its setups measured more than once)."""

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
SETUP = "trtllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1024,128,,,8,1,1,,1,1"


def _file(tmp_path: Path, *figures: str) -> Path:
    f = tmp_path / "m.csv"
    f.write_text(HEADER + "".join(f"r{i},,{SETUP},{x}\n" for i, x in enumerate(figures)))
    return f


def test_repeated_setup_gives_the_noise_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two runs of one setup, TTFT 100 / 144 ms (geometric mean 120: 20 % and 16.7 %), TPOT 8 / 8
    f = _file(tmp_path, "100,8", "144,8", "144.05,8.001")  # the third is a copy of the second
    assert main(["accuracy", "--measured", str(f), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["agg"]["repeats"]
    assert rep["setups"] == 1 and rep["ttft_ape"]["n"] == 2
    assert rep["ttft_ape"]["median"] == pytest.approx((20.0 + 24 / 144 * 100) / 2)
    assert main(["accuracy", "--measured", str(f)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 setup measured more than once (2 distinct measurements)" in out


def test_no_repeats_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["accuracy", "--measured", str(_file(tmp_path, "100,8"))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no setup was measured more than once" in out
