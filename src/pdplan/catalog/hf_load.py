"""Find and parse a Hugging Face config.json: its file, the text model's keys, a side quant file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pdplan.errors import InputError

__all__ = ["hf_id_from_path", "load_config_dict", "side_quant", "text_config"]

# keys that may sit at the top level of a multimodal config instead of text_config
_OUTER_KEYS = ("quantization_config", "tie_word_embeddings", "torch_dtype", "dtype")


def load_config_dict(path: str | Path) -> dict[str, Any]:
    """Parse a config.json (or a directory holding one); InputError names the file on failure."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        text = p.read_text(encoding="utf-8-sig")  # -sig: a leading BOM (Windows editors) is skipped
    except UnicodeDecodeError as e:  # byte offset -> line: the one to look at
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise InputError(
            "not UTF-8 text: a config.json is UTF-8 JSON; re-save it as UTF-8",
            path=str(p),
            line=line,
        ) from e
    except OSError as e:
        raise InputError(f"cannot read config: {e.__class__.__name__}: {e}", path=str(p)) from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", path=str(p), line=e.lineno) from e
    if not isinstance(data, dict):
        raise InputError("config.json must hold a JSON object", path=str(p))
    return data


def side_quant(p: Path) -> dict[str, Any] | None:
    """ModelOpt's hf_quant_config.json next to the config (NVFP4 checkpoints keep it apart)."""
    stem = p.name[: -len("config.json")] if p.name.endswith("config.json") else ""
    side = p.with_name(stem + "hf_quant_config.json")
    if not side.is_file():
        return None
    q = load_config_dict(side).get("quantization")
    return q if isinstance(q, dict) else None


def hf_id_from_path(p: Path) -> str:
    """`org--Model_config.json` (our copies) -> `org/Model`; `dir/config.json` -> `dir`."""
    if p.name == "config.json":
        return p.parent.name
    return p.name.removesuffix(".json").removesuffix("_config").replace("--", "/", 1)


def text_config(d: Mapping[str, Any]) -> dict[str, Any]:
    """The language model's keys: text_config (multimodal) merged with top-level fallbacks."""
    inner = d.get("text_config") or d.get("language_config")
    if not isinstance(inner, dict):
        return dict(d)
    t = dict(inner)
    for k in _OUTER_KEYS:
        if t.get(k) is None and d.get(k) is not None:
            t[k] = d[k]
    return t
