"""Model lookup by path: a folder without config.json, or a path that does not exist, is said
so in one line instead of 'unknown model' and the whole catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError, InputError


def test_a_folder_without_config_json_says_so(tmp_path: Path) -> None:
    (tmp_path / "Org--Model_config.json").write_text("{}")
    with pytest.raises(InputError) as exc:
        get_model(str(tmp_path))
    msg = str(exc.value)
    assert msg.startswith(f"no config.json in {tmp_path}")
    assert "Org--Model_config.json" in msg and "known:" not in msg
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"^no config.json in \S+$"):
        get_model(str(empty))


@pytest.mark.parametrize("name", ["/no/such/dir", "/no/such/config.json", "./nope.json",
                                  "a/b/c"])  # fmt: skip
def test_a_path_that_does_not_exist_says_so(name: str) -> None:
    with pytest.raises(InputError) as exc:
        get_model(name)
    assert str(exc.value).startswith(f"{name}: no such file or directory")
    assert "known:" not in str(exc.value) and "FileNotFoundError" not in str(exc.value)


def test_hf_ids_and_real_paths_still_resolve(tmp_path: Path) -> None:
    assert get_model("meta-llama/Llama-3.1-8B").name == "llama-3.1-8b"
    with pytest.raises(ConfigError, match="unknown model 'Foo/Bar-7B'"):
        get_model("Foo/Bar-7B")  # one '/': an HF id, not a path
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
           "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
           "intermediate_size": 1024, "vocab_size": 1000}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert get_model(str(tmp_path)).num_layers == 2
