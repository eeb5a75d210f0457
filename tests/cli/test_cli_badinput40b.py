"""Bad input, pass 40b: a config.json that is not UTF-8 names its line, and a refused
--spec-decode names the text it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdplan.catalog.hf_load import load_config_dict
from pdplan.cli import main
from pdplan.errors import ConfigError, InputError
from pdplan.perf.spec_decode import parse_spec


def test_a_latin1_config_names_its_line(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    text = json.dumps({"model_type": "llama", "hidden_size": 64}, indent=1)  # 4 lines
    cfg.write_bytes(text.encode() + b'\n"caf\xe9"\n')
    with pytest.raises(InputError) as e:
        load_config_dict(tmp_path)
    assert (
        str(e.value) == f"{cfg}:5: not UTF-8 text: a config.json is UTF-8 JSON; re-save it as UTF-8"
    )


def test_the_cli_reports_it_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_bytes(b'{"model_type": "llama",\n "name": "\xff"}')
    assert main(["kv", "--model", str(cfg), "--tokens", "100"]) == 2
    err = capsys.readouterr().err
    assert ":2: not UTF-8 text" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "says"),
    [("mtp:0", "draft_tokens=0 must be in 1..16"), ("eagle:2:1.5", "acceptance=1.5")],
)
def test_a_refused_spec_names_its_text(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_spec(text)
    assert str(e.value).startswith(f"speculative decoding {text!r}: ") and says in str(e.value)
