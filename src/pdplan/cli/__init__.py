"""L5 command-line face: `pdplan <command>`; the only place (with web/) that imports typer."""

from __future__ import annotations

import importlib
import os
import sys
import traceback

import typer

from pdplan.errors import PdplanError

__all__ = ["app", "main"]

# exit status of a run stopped by Ctrl-C (SIGINT): 128 + 2, the shells' convention
INTERRUPTED = 130

_app = typer.Typer(
    name="pdplan",
    help="Plan LLM serving: parallel layout, PD disaggregation and the xPyD ratio.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@_app.callback()
def _root(
    gpu_file: str | None = typer.Option(
        None,
        "--gpu-file",
        envvar="PDPLAN_GPU_FILE",
        help="YAML file of extra GPUs or overrides (fields of GPUSpec; `base: h100-sxm` to "
        "override only some fields)",
    ),
    efficiency_file: str | None = typer.Option(
        None,
        "--efficiency-file",
        envvar="PDPLAN_EFFICIENCY_FILE",
        help="YAML overlay of the cost model's efficiency factors (`engines: {vllm: {mem_eta: "
        "0.7}}`, optional per-GPU `gpus:` blocks), as `pdplan calibrate --out` writes it",
    ),
) -> None:
    """Plan LLM serving: parallel layout, PD disaggregation and the xPyD ratio."""
    from pdplan.cli._paths import note_root_inputs

    note_root_inputs({"--gpu-file": gpu_file, "--efficiency-file": efficiency_file})
    for flag, value in (("--gpu-file", gpu_file), ("--efficiency-file", efficiency_file)):
        if value is not None and not value.strip():  # an explicit '' is a mistake, not "unset"
            from pdplan.errors import ConfigError

            raise ConfigError(f"{flag} was given an empty path; name a YAML file or drop it")
    if gpu_file:
        from pdplan.catalog.gpus import add_gpus, load_gpu_file

        add_gpus(load_gpu_file(gpu_file))
    from pdplan.perf.efficiency import set_efficiency_overrides

    if efficiency_file:  # after --gpu-file: its GPUs may name the overlay's blocks
        from pdplan.perf.efficiency_file import load_efficiency_file

        set_efficiency_overrides(load_efficiency_file(efficiency_file))
    else:  # a run in the same process (tests, main() twice) keeps no earlier overlay
        set_efficiency_overrides(None)


# Each module defines register(app). Order = order in `pdplan --help`.
_COMMAND_MODULES = (
    "ratio",
    "kv",
    "parallel",
    "estimate",
    "accuracy",
    "calibrate",
    "workload",
    "simulate",
    "catalog",
)
# command name -> the module that registers it (where the two differ)
_MODULE_OF = {"models": "catalog", "gpus": "catalog"}
_registered: set[str] = set()


def _register(names: tuple[str, ...] = _COMMAND_MODULES) -> None:
    for name in names:
        if name in _registered:
            continue
        try:
            mod = importlib.import_module(f"pdplan.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"pdplan.cli.{name}":
                continue  # command not built yet
            raise
        mod.register(_app)
        _registered.add(name)


def _command_named(args: list[str]) -> str | None:
    """The command word of a command line (after the root's options), else None."""
    it = iter(args)
    for word in it:
        if word in ("--gpu-file", "--efficiency-file"):
            next(it, None)  # its value
        elif not word.startswith("-"):
            return word
    return None


def _register_for(args: list[str]) -> None:
    """Register only the module of the command asked for: importing every command's stack
    (the simulator, the trace readers, pyarrow) cost ~0.3 s per run (measured here with
    `python -X importtime`); `pdplan --help`, no command or an unknown one get them all."""
    word = _command_named(args)
    module = _MODULE_OF.get(word or "", word)
    if module in _COMMAND_MODULES:
        _register((module,))
    else:
        _register()


def __getattr__(name: str) -> typer.Typer:
    """`pdplan.cli.app`, with every command registered (what a caller importing it expects)."""
    if name == "app":
        _register()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _usage_error(exc: Exception) -> tuple[str, int] | None:
    """A click usage error (bad option, missing argument: click or typer's vendored copy) as
    one line and its exit code; None for anything else."""
    fmt, code = getattr(exc, "format_message", None), getattr(exc, "exit_code", None)
    if not callable(fmt) or not isinstance(code, int):
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":
        # `pdplan` / `pdplan workload` alone: typer's rich help is already printed (its
        # message is then empty); click's convention is exit 2 for a missing command
        return fmt().rstrip(), code
    ctx = getattr(exc, "ctx", None)
    where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    return f"error: {fmt()}{where}", code


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the app; every error becomes one line on stderr, exit != 0."""
    _register_for(sys.argv[1:] if argv is None else list(argv))
    try:
        rc = _app(args=argv, standalone_mode=False)  # click returns typer.Exit's code here
        if rc == INTERRUPTED:  # typer turns Ctrl-C into a silent Exit(130); say it
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C): stopped before the end", file=sys.stderr)
        return INTERRUPTED
    except PdplanError as exc:
        if os.environ.get("PDPLAN_DEBUG"):  # where the input was refused, then the one line
            traceback.print_exc(file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return INTERRUPTED
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        return int(code or 0)
    except Exception as exc:  # the CLI never shows a bare traceback
        return _unexpected(exc)
    return rc if isinstance(rc, int) else 0


def _unexpected(exc: Exception) -> int:
    """An exception no command turned into a PdplanError: a usage error (its own exit code),
    a file the system refused by name (a name over 255 bytes: ENAMETOOLONG, raised by
    Path.exists / is_file, which pass over ENOENT only), else an internal error (exit 1)."""
    usage = _usage_error(exc)
    if usage is not None:
        if usage[0]:
            print(usage[0], file=sys.stderr)
        return usage[1]
    if os.environ.get("PDPLAN_DEBUG"):
        raise exc
    if isinstance(exc, OSError) and isinstance(exc.filename, str):
        name = exc.filename
        shown = name if len(name) <= 80 else f"{name[:40]}...{name[-20:]} ({len(name):,} chars)"
        print(f"error: {shown}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(
        f"internal error: {type(exc).__name__}: {exc} (PDPLAN_DEBUG=1 shows the traceback)",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
