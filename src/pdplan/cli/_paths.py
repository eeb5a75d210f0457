"""Output paths checked before any work: writable, and never one of the command's inputs."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pdplan.errors import ConfigError, InputError

__all__ = ["check_output", "note_root_inputs", "replaced_on_success"]

# The root's input files ({flag: path}: --gpu-file, --efficiency-file), read by every command:
# no command's output may replace one (set by the root callback on each run)
_ROOT_INPUTS: dict[str, str] = {}


def note_root_inputs(files: dict[str, str | None]) -> None:
    """Remember this run's root input files, checked by every check_output."""
    _ROOT_INPUTS.clear()
    _ROOT_INPUTS.update({flag: path for flag, path in files.items() if path})


def _same(a: Path, b: Path) -> bool:
    """a and b name one file (through links, '..', case-insensitive file systems)."""
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(
    path: str, flag: str, inputs: dict[str, str] | None = None, may_replace: str = ""
) -> None:
    """Fail now, not after the work, if `path` (given as `flag`) names an input ({flag: path}
    `inputs`, the root's files but `may_replace`, one it merges into) or cannot be written: its
    folder is missing or a file, or the file system refuses it (read-only, /proc, no
    permission). A file that did not exist is created empty to test this, then removed."""
    out = Path(path)
    named = {k: v for k, v in _ROOT_INPUTS.items() if k != may_replace} | (inputs or {})
    for in_flag, in_path in named.items():
        if in_path and (_same(out, Path(in_path)) or out.resolve() == Path(in_path).resolve()):
            raise ConfigError(
                f"{flag} {path} is the {in_flag} file: writing it would replace the input; "
                "give the output its own file"
            )
    parent = out.resolve().parent
    if parent.exists() and not parent.is_dir():
        raise InputError(f"cannot write {flag}: {parent} is a file, not a folder", path=path)
    if not parent.is_dir():
        raise InputError(f"cannot write {flag}: no folder {parent}", path=path)
    if out.is_dir():
        raise InputError(f"cannot write {flag}: it is a folder", path=path)
    existed = out.exists()
    if existed and not out.is_file():
        # a FIFO or device (/dev/stdout, mkfifo): opening it here would block until a reader
        # comes, then hand that reader an end-of-file before the real output; ask instead
        if not os.access(out, os.W_OK):
            raise InputError(f"cannot write {flag}: permission denied", path=path)
        return
    try:
        with open(out, "a"):  # append mode: an existing file is left as it is
            pass
    except OSError as exc:
        raise InputError(f"cannot write {flag}: {exc.strerror or exc}", path=path) from None
    if not existed:
        try:
            out.unlink()
        except OSError:
            pass


def _names_a_descriptor(path: str) -> bool:
    """`path` is, or links to, an open descriptor's name (/dev/stdout, /dev/fd/N,
    /proc/self/fd/N): a pipe there resolves to no file, and renaming over the file a shell
    redirected it to would detach the descriptor, so such a name is written as is."""
    p = os.path.abspath(path)
    for _ in range(40):  # a link chain; 40 is the kernel's own limit
        if re.fullmatch(r"/proc/[^/]+/fd|/dev/fd", os.path.realpath(os.path.dirname(p))):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.join(os.path.dirname(p), os.readlink(p))
    return False


@contextmanager
def replaced_on_success(path: str) -> Iterator[str]:
    """Yield a temporary name beside `path` to write to; it becomes `path` (os.replace, one
    atomic rename) only when the block ends without an exception. An interrupt (Ctrl-C) or a
    failed write mid-file removes it, so no truncated file is left under `path` looking
    complete; a file already there stays as it was. A link is followed (its target replaced,
    its mode kept); a path that is not a regular file (/dev/stdout, a FIFO) is written as is."""
    real = Path(os.path.realpath(path))
    if _names_a_descriptor(path) or (real.exists() and not real.is_file()):
        yield path
        return
    tmp = real.with_name(f".{real.name}.{os.getpid()}.part")
    try:
        yield str(tmp)
        if real.exists():  # a new file's mode is open()'s, as writing `path` would give
            shutil.copymode(real, tmp)
        os.replace(tmp, real)
    finally:
        tmp.unlink(missing_ok=True)
