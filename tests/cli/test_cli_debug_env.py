"""PDPLAN_DEBUG: refused input still exits 2 with its one error line, after the traceback."""

from __future__ import annotations

import pytest

from pdplan.cli import main


def test_debug_shows_where_bad_input_was_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["kv", "--model", "no-such-model-xyz"]
    monkeypatch.delenv("PDPLAN_DEBUG", raising=False)
    assert main(argv) == 2
    plain = capsys.readouterr().err
    assert plain.startswith("error: ") and plain.count("\n") == 1
    monkeypatch.setenv("PDPLAN_DEBUG", "1")
    assert main(argv) == 2
    debug = capsys.readouterr().err
    assert "Traceback (most recent call last)" in debug
    assert debug.rstrip("\n").splitlines()[-1] == plain.rstrip("\n")
