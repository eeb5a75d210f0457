"""`pdplan CMD` imports only CMD's module (not the simulator, trace readers or pyarrow for
`pdplan kv`); `pdplan --help`, an unknown command and `pdplan.cli.app` still see them all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pdplan.sim", "pdplan.workload", "pyarrow", "pdplan.cli.simulate")


def _modules_after(args: list[str]) -> tuple[int, list[str], str]:
    code = (
        "import sys, io, contextlib, json\n"
        "from pdplan.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    rc = main({args!r})\n"
        f"print(rc, json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))\n"
        "print(out.getvalue().replace(chr(10), ' '), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    rc, _, mods = res.stdout.strip().partition(" ")
    return int(rc), json.loads(mods), res.stderr


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["kv", "--model", "llama-3.1-8b", "--tokens", "100"], 0),
        (["--gpu-file", "/nonexistent.yaml", "kv", "--help"], 2),  # the root option's value
        (["models"], 0),
    ],
)
def test_a_light_command_imports_no_heavy_stack(args: list[str], status: int) -> None:
    rc, mods, err = _modules_after(args)
    assert rc == status and mods == []
    if status:
        assert "nonexistent.yaml" in err


def test_help_and_unknown_commands_list_every_command() -> None:
    _, mods, out = _modules_after(["--help"])
    for cmd in ("ratio", "kv", "parallel", "estimate", "accuracy", "workload", "simulate"):
        assert f" {cmd} " in out, cmd
    assert "pdplan.cli.simulate" in mods
    rc, _, err = _modules_after(["nosuch"])
    assert rc == 2 and "No such command 'nosuch'" in err


def test_app_attribute_has_every_command() -> None:
    import typer

    from pdplan.cli import app

    names = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert {"ratio", "kv", "simulate", "workload", "models", "gpus"} <= names
