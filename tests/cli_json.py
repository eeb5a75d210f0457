"""Shared test helper: run the CLI in-process and return its `--json` output."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from pdplan.cli import main


def cli_json(*args: object) -> dict[str, Any]:
    """main(args) with stdout / stderr captured; asserts exit 0 and parses stdout as JSON."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    assert rc == 0, err.getvalue()
    return json.loads(out.getvalue())  # type: ignore[no-any-return]
