"""Shared helper of the CLI tests: run main() in-process and capture its exit code and streams."""

from __future__ import annotations

import pytest

from pdplan.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `pdplan ARGS` (each arg passed through str())."""
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err
