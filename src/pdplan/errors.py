"""The project's named errors: every user-facing failure is one of these, never a bare traceback."""

from __future__ import annotations

__all__ = ["ConfigError", "DoesNotFitError", "InputError", "PdplanError"]


class PdplanError(Exception):
    """Base of every error pdplan raises on purpose; the CLI prints its message on one line."""


class InputError(PdplanError):
    """Malformed user input: a file, a line, a flag value. Message names where and what."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class ConfigError(PdplanError):
    """An impossible configuration, e.g. 'TP=3 does not divide 64 attention heads'."""


class DoesNotFitError(ConfigError):
    """The model does not fit in memory under the given layout; message says by how much."""

    def __init__(self, message: str, *, need_bytes: float = 0.0, have_bytes: float = 0.0) -> None:
        self.need_bytes = need_bytes
        self.have_bytes = have_bytes
        super().__init__(message)
