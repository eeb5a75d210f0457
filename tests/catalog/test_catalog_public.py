"""The catalog package's public surface: __all__ names exist and are the documented entry points."""

from __future__ import annotations

import pdplan.catalog as catalog


def test_all_is_exact_and_importable() -> None:
    expected = {
        "DTYPE_BYTES",
        "ClusterSpec",
        "GPUSpec",
        "LinearAttnSpec",
        "MLASpec",
        "MoESpec",
        "ModelSpec",
        "dtype_bytes",
        "get_gpu",
        "get_model",
        "list_gpus",
        "list_models",
        "load_config_dict",
        "load_gpu_file",
        "make_cluster",
        "model_from_hf_config",
        "resolve_model_name",
    }
    assert set(catalog.__all__) == expected
    for name in catalog.__all__:
        assert getattr(catalog, name) is not None, name
    assert catalog.get_model("qwen3-32b").name == "qwen3-32b"
    assert catalog.get_gpu("h200").name == "h200-sxm"
