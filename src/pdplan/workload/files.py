"""Opening trace files: raw bytes, transparently gunzipped, UTF-8 text, the first 64 KiB."""

from __future__ import annotations

import gzip
import io
import zlib
from typing import IO

from pdplan.errors import InputError

__all__ = ["broken_off", "is_gzip", "open_binary", "open_text", "read_head"]

_GZIP_MAGIC = b"\x1f\x8b"  # RFC 1952 member header
_HEAD_BYTES = 1 << 16  # bytes read to detect a format: 64 KiB holds a header and many rows


def is_gzip(path: str) -> bool:
    """Whether the file starts with gzip's magic bytes (whatever its name)."""
    with _open_raw(path) as f:
        return f.read(2) == _GZIP_MAGIC


def _open_raw(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=path) from None


def open_binary(path: str) -> IO[bytes]:
    """The file's bytes, transparently gunzipped."""
    if is_gzip(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return _open_raw(path)


def open_text(path: str) -> IO[str]:
    """UTF-8 text; undecodable bytes become U+FFFD so the bad row is named, not the decoder."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="replace", newline="")


def read_head(path: str) -> bytes:
    """The first 64 KiB of the file, gunzipped: what format detection reads."""
    try:
        with open_binary(path) as f:
            return f.read(_HEAD_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read (corrupt gzip?): {exc}", path=path) from None


def broken_off(path: str, lines_read: int, exc: BaseException) -> InputError:
    """The error for a file whose data ends or breaks after `lines_read` whole lines (a gzip
    cut mid-stream, a read error), naming the line where it breaks off."""
    what = "truncated or corrupt compressed data" if is_gzip(path) else "cannot read"
    return InputError(
        f"{what} ({exc}): the file breaks off after line {lines_read:,}",
        path=path,
        line=lines_read + 1,
    )
