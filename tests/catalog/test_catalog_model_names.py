"""Fine-tunes named after their base (catalog.model_names.by_family_size): read as the base
preset's shape, said in the spec's source and by the CLI, and refused when the name does not
single out one preset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.catalog import get_model
from pdplan.catalog.model_names import by_family_size
from pdplan.catalog.models import guessed_shape, resolve_model_name
from pdplan.cli import main
from pdplan.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "key", "dtype"),
    [
        ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "llama-3.1-70b", "bf16"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "llama-3.1-8b", "bf16"),
        ("RedHatAI/Hermes-3-Llama-3.1-70B-FP8", "llama-3.1-70b", "fp8"),
        ("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", "qwen3-8b", "bf16"),  # a Qwen3-8B distill
        ("allenai/Llama-3.1-Tulu-3-70B", "llama-3.1-70b", "bf16"),  # not llama-3-70b
        ("Qwen/Qwen2.5-Math-7B", "qwen2.5-7b", "bf16"),
    ],
)
def test_fine_tunes_take_their_base_shape(name: str, key: str, dtype: str) -> None:
    assert resolve_model_name(name) is None  # not a spelling of a preset: a guess, said so
    spec = get_model(name)
    base = get_model(key)
    assert spec.name == key and spec.hf_id == name and spec.weight_dtype == dtype
    assert (spec.num_layers, spec.hidden_size, spec.num_kv_heads) == (
        base.num_layers,
        base.hidden_size,
        base.num_kv_heads,
    )
    note = guessed_shape(spec)
    assert note is not None and f"read as {key}'s shape" in note and "config.json" in note


@pytest.mark.parametrize(
    "name",
    [
        "nvidia/Llama-3.1-Nemotron-Nano-4B-v1.1",  # a pruned 4B: no llama-3.1-4b preset
        "nvidia/Llama-3_1-Nemotron-51B-Instruct",  # NAS blocks, not a 70B shape
        "meta-llama/Llama-3.2-11B-Vision-Instruct",  # "11b" is not "1b"
        "Qwen/Qwen1.5-72B",  # another family than qwen2.5
        "foo/bar-7b",
        "ibm-granite/granite-3.3-8b-instruct",  # no granite preset
    ],
)
def test_names_that_single_out_no_preset_stay_unknown(name: str) -> None:
    assert by_family_size(name) is None
    with pytest.raises(ConfigError, match="unknown model"):
        get_model(name)


def test_catalog_names_are_not_guesses() -> None:
    for name in ("llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct", "Qwen/Qwen3-32B-FP8"):
        assert guessed_shape(get_model(name)) is None


def test_cli_warns_and_lists_the_guess_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    name = "nvidia/Llama-3.1-Nemotron-70B-Instruct-HF"
    assert main(["estimate", "--model", name, "--gpu", "h100", "--json"]) == 0
    cap = capsys.readouterr()
    assert "warning: " + name + " is not in the catalog" in cap.err
    assert any("read as llama-3.1-70b's shape" in w for w in json.loads(cap.out)["warnings"])
    sim = ["simulate", "--model", name, "--gpu", "h100", "--deployment", "tp4"]
    assert main([*sim, "--workload", "closed:c=2,n=10"]) == 0
    assert "read as llama-3.1-70b's shape" in capsys.readouterr().err


def test_gptq_suffix_names_int4_weights() -> None:
    assert resolve_model_name("TheBloke/Llama-2-13B-chat-GPTQ") == ("llama-2-13b", "int4")
    assert resolve_model_name("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4") == ("qwen2.5-72b", "int4")


def test_accuracy_counts_rows_read_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = (
        "id,backend,backend_version,model_path,system,mode,isl,osl,batch_size,tp_size,"
        "silicon_ttft_ms,silicon_tpot_ms\n"
    )
    rows = "".join(
        f"r{i},vllm,0.12.0,{m},h100_sxm,agg,1024,128,4,1,40,8\n"
        for i, m in enumerate(["NousResearch/Hermes-3-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"])
    )
    f = tmp_path / "rows.csv"
    f.write_text(head + rows)
    assert main(["accuracy", "--measured", str(f)]) == 0
    out = capsys.readouterr().out
    assert "predicted 2 rows" in out
    assert "1 rows of NousResearch/Hermes-3-Llama-3.1-8B (not in the catalog) were read as" in out


def test_qwen2_dense_models_take_the_qwen25_shape() -> None:
    for size in ("72b", "7b", "1.5b", "0.5b"):
        spec = get_model(f"Qwen/Qwen2-{size.upper()}-Instruct")
        assert spec.name == f"qwen2.5-{size}" and guessed_shape(spec) is None  # an alias


def test_deepseek_v2_family_ids() -> None:
    for name, key in [
        ("deepseek-ai/DeepSeek-V2.5", "deepseek-v2"),
        ("deepseek-ai/DeepSeek-Coder-V2-Instruct", "deepseek-v2"),
        ("deepseek-ai/DeepSeek-V2-Lite-Chat", "deepseek-v2-lite"),
        ("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "deepseek-v2-lite"),
    ]:
        spec = get_model(name)
        assert spec.name == key and guessed_shape(spec) is None and spec.mla is not None
