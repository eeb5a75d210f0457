"""Tests of the built-in model presets: reference params / KV, HF-id lookup, errors."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

from pdplan.catalog.hf_config import model_from_hf_config
from pdplan.catalog.models import get_model, list_models, resolve_model_name
from pdplan.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
REF = REPO.parent / "shared" / "data" / "reference"
CALIB = REPO.parent / "shared" / "data" / "calibration" / "measured_serving.csv"

# models.csv `model` column -> our preset key
CSV_TO_PRESET = {
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "Llama-3.1-405B": "llama-3.1-405b",
    "Qwen3-32B": "qwen3-32b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "DeepSeek-V3": "deepseek-v3",
    "Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "gpt-oss-120b": "gpt-oss-120b",
    "Kimi-K2-Instruct": "kimi-k2",
}

REQUIRED = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "deepseek-v3",
    "deepseek-r1",
    "kimi-k2",
    "kimi-k2.5",
    "mixtral-8x7b",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "minimax-m2.5",
    "qwen3.5-397b-a17b",
    "glm-5",
]


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        pytest.skip(f"shared data not present at {path}")
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_required_presets_exist_and_record_source() -> None:
    names = list_models()
    assert names == sorted(names)
    for key in REQUIRED:
        m = get_model(key)
        assert m.name == key and key in names
        assert m.source.endswith(" config.json") and "/" in m.source and "/" in m.hf_id


def test_params_and_kv_match_models_csv() -> None:
    rows = _rows(REF / "models.csv")
    assert {r["model"] for r in rows} == set(CSV_TO_PRESET)  # every listed model is checked
    for r in rows:
        m = get_model(CSV_TO_PRESET[r["model"]])
        total, active = float(r["total_params_B_computed"]), float(r["active_params_B_computed"])
        assert m.total_params / 1e9 == pytest.approx(total, rel=0.01), r["model"]
        assert m.active_params / 1e9 == pytest.approx(active, rel=0.01), r["model"]
        kv = int(r["kv_bytes_per_token_bf16"])
        if m.sliding_window:  # gpt-oss: csv counts only the growing (full-attention) layers
            grow = m.kv_bytes(10 * m.sliding_window + 1) - m.kv_bytes(10 * m.sliding_window)
            assert grow == kv, r["model"]
        else:
            assert m.kv_bytes_per_token("bf16") == kv, r["model"]


def test_kv_reference_values_by_hand() -> None:
    # 2 (K,V) * 80 layers * 8 KV heads * 128 dims * 2 B (seed-summary "Known errors")
    assert get_model("llama-3.1-70b").kv_bytes_per_token("bf16") == 327_680
    # MLA: 61 layers * (512 latent + 64 rope key) * 2 B
    assert get_model("deepseek-v3").kv_bytes_per_token("bf16") == 70_272
    oss = get_model("gpt-oss-120b")
    # 18 full layers * 2 * 8 * 64 * 2 B = 36,864 B per token beyond the 128-token window;
    # the 18 sliding layers hold at most 128 tokens: 18 * 2048 B * 128 = 4,718,592 B
    assert oss.kv_bytes(4096) == 36_864 * 4096 + 4_718_592
    assert oss.kv_bytes_per_token("bf16") == 2 * 36_864  # context within the window


def test_moe_shapes_by_hand() -> None:
    ds = get_model("deepseek-v3")
    assert ds.num_moe_layers == 58 and ds.moe.num_shared_experts == 1  # type: ignore[union-attr]
    assert ds.weight_dtype == "fp8" and ds.attention_kind == "mla"
    assert get_model("kimi-k2").weight_dtype == "fp8"
    oss = get_model("gpt-oss-120b")  # MXFP4 experts, BF16 attention (modules_to_not_convert)
    assert (oss.weight_dtype, oss.moe_weight_dtype) == ("bf16", "mxfp4")
    oss20 = get_model("gpt-oss-20b")
    assert (oss20.num_layers, oss20.moe.num_experts) == (24, 32)  # type: ignore[union-attr]
    q35 = get_model("qwen3.5-397b-a17b")
    assert q35.count_layers("full") == 15 and q35.count_layers("linear") == 45
    assert 390e9 < q35.total_params < 400e9 and 16e9 < q35.active_params < 18e9
    glm = get_model("glm-5")
    assert 740e9 < glm.total_params < 750e9  # GLM-5: 744B total (Z.ai release)


@pytest.mark.parametrize(
    ("name", "key", "dtype"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b", "bf16"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-r1", "fp8"),
        ("nvidia/DeepSeek-R1-NVFP4", "deepseek-r1", "fp4"),
        ("Qwen/Qwen3-235B-A22B-FP8", "qwen3-235b-a22b", "fp8"),
        ("zhipuai/GLM-5", "glm-5", "bf16"),
        ("moonshotai/Kimi-K2.5", "kimi-k2.5", "int4"),
        ("MiniMaxAI/MiniMax-M2.5", "minimax-m2.5", "fp8"),
        ("Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b", "bf16"),
        ("openai/gpt-oss-120b", "gpt-oss-120b", "mxfp4"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", "bf16"),
        ("nvidia/Qwen3-32B-NVFP4", "qwen3-32b", "fp4"),
        ("nvidia/DeepSeek-V3.1-NVFP4", "deepseek-v3.1", "fp4"),
        ("Qwen/Qwen3-32B-FP8-Static-PerTensor", "qwen3-32b", "fp8"),  # AIConfigurator sample
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-W8A8-FP8", "llama-3.1-8b", "fp8"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b", "bf16"),
        ("LLAMA-3.1-8B", "llama-3.1-8b", "bf16"),
    ],
)
def test_hf_ids_resolve(name: str, key: str, dtype: str) -> None:
    m = get_model(name)  # dtype: the experts' where a release keeps them apart (gpt-oss)
    assert (m.name, m.moe_weight_dtype or m.weight_dtype) == (key, dtype)
    if "/" in name:
        assert m.hf_id == name


def test_every_calibration_model_path_resolves() -> None:
    paths = {r["model_path"] for r in _rows(CALIB)}
    assert len(paths) >= 13
    for p in paths:
        assert resolve_model_name(p) is not None, p
        get_model(p)


def test_unknown_model_lists_close_matches() -> None:
    with pytest.raises(ConfigError) as e:
        get_model("llama-3.1-7b")
    msg = str(e.value)
    assert "did you mean llama-3.1-70b" in msg and "config.json" in msg
    assert resolve_model_name("foo/Bar-9B") is None


def test_config_path_works(tmp_path: Path) -> None:
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    path = tmp_path / "my_config.json"
    path.write_text(json.dumps(cfg))
    m = get_model(str(path))
    assert (m.hidden_size, m.num_kv_heads, m.head_dim) == (64, 2, 16)


def test_presets_equal_reader_output() -> None:
    """The shipped presets are exactly what the reader gives on their source configs."""
    if not (REF / "hf_configs").is_dir():
        pytest.skip("shared hf_configs not present")
    from tests.catalog.make_model_presets import EXTRA_CONFIGS
    from tests.catalog.test_catalog_popular_presets import GEMMA, POPULAR_CONFIGS, gemma_config

    extra = {**EXTRA_CONFIGS, **POPULAR_CONFIGS}  # configs not in ../shared, kept in tests
    extra.update({k: (get_model(k).hf_id, gemma_config(k)) for k in GEMMA})
    for key in list_models():
        m = get_model(key)
        stem = m.source.removesuffix(" config.json").replace("/", "--", 1)
        if key in extra:
            fresh = model_from_hf_config(extra[key][1], hf_id=extra[key][0])
        else:
            fresh = model_from_hf_config(REF / "hf_configs" / f"{stem}_config.json")
        keep = {"name": m.name, "hf_id": m.hf_id, "source": m.source}
        keep["weight_dtype"] = m.weight_dtype  # deepseek-v3.1: release fp8, source copy NVFP4
        if m.weight_dtype != fresh.weight_dtype:  # ... and the release's KV, not the copy's FP8
            keep["kv_cache_dtype"] = m.kv_cache_dtype
        assert dataclasses.replace(fresh, **keep) == m, key
