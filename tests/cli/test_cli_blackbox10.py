"""Black-box round 10: kv link rates, GPU files, config.json limits, accuracy input, dir()."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pdplan.catalog.gpus import USER_GPUS
from pdplan.cli import main

LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,"
    "osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
    "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
)
ROW = "ok,x,vllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1024,128,,,8,1,1,,1,1,100,8\n"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc: int, out: str, err: str) -> None:
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), err


@pytest.fixture(autouse=True)
def _no_user_gpus() -> None:
    USER_GPUS.clear()


@pytest.mark.parametrize("rate", ["nan", "inf"])
def test_kv_refuses_a_non_finite_link_rate(capsys: pytest.CaptureFixture[str], rate: str) -> None:
    rc, out, err = _run(capsys, "kv", "--link-gbps", rate)
    _one_line_error(rc, out, err)
    assert f"--link-gbps={rate} must be a finite line rate > 0 Gb/s" in err


@pytest.mark.parametrize("value", [".inf", ".nan", "1e999"])
def test_gpu_file_refuses_infinite_bandwidth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(f"my-h200:\n  base: h200-sxm\n  nic_gbps: {value}\n")
    rc, out, err = _run(capsys, "--gpu-file", str(f), "gpus")
    _one_line_error(rc, out, err)
    assert "field 'nic_gbps' must be a finite number > 0" in err and str(f) in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": 20_000}, "num_hidden_layers 20000 is more than any model"),
        ({"quantization_config": "fp8"}, "quantization_config must be an object, got str"),
        ({"quantization_config": [1]}, "quantization_config must be an object, got list"),
        (
            {"quantization_config": {"config_groups": {"g": {"weights": {"num_bits": "four"}}}}},
            "config_groups.g.weights.num_bits must be a whole number > 0, got 'four'",
        ),
    ],
)
def test_config_json_refuses_impossible_depth_and_malformed_quantization(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, message: str
) -> None:
    f = tmp_path / "config.json"
    f.write_text(json.dumps({**LLAMA_8B, **change}))
    rc, out, err = _run(capsys, "models", str(f))  # 1e9 layers ran out of memory
    _one_line_error(rc, out, err)
    assert message in err and str(f) in err


def test_accuracy_refuses_gzip_and_non_utf8_with_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gz = tmp_path / "m.csv.gz"
    gz.write_bytes(gzip.compress((HEADER + ROW).encode()))
    rc, out, err = _run(capsys, "accuracy", "--measured", str(gz))
    _one_line_error(rc, out, err)
    assert "gzip-compressed: gunzip it first" in err
    latin = tmp_path / "m.csv"
    latin.write_bytes((HEADER + ROW).encode() + "caf\xe9,x\n".encode("latin-1"))
    rc, out, err = _run(capsys, "accuracy", "--measured", str(latin))
    _one_line_error(rc, out, err)
    assert f"{latin}:3: not UTF-8 text" in err


def test_accuracy_refuses_a_header_only_file_and_an_empty_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "m.csv"
    f.write_text(HEADER)
    rc, out, err = _run(capsys, "accuracy", "--measured", str(f), "--json")
    _one_line_error(rc, out, err)
    assert "no data rows (header only)" in err
    f.write_text(HEADER + ROW)
    rc, out, err = _run(capsys, "accuracy", "--measured", str(f), "--mode", "disagg")
    _one_line_error(rc, out, err)
    assert "no rows with mode disagg" in err


def test_accuracy_checks_the_rows_folder_before_predicting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pdplan.plan.accuracy as acc

    f = tmp_path / "m.csv"
    f.write_text(HEADER + ROW)

    def never(*a: object, **k: object) -> dict:
        raise AssertionError("predicted before checking --rows")

    monkeypatch.setattr(acc, "run_accuracy", never)
    out_csv = tmp_path / "missing" / "rows.csv"
    rc, out, err = _run(capsys, "accuracy", "--measured", str(f), "--rows", str(out_csv))
    _one_line_error(rc, out, err)
    assert "cannot write --rows: no folder" in err


def test_dir_lists_every_public_name_before_first_use() -> None:
    code = "import pdplan, json; print(json.dumps(sorted(set(pdplan.__all__) - set(dir(pdplan)))))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(r.stdout) == []
