"""Opening trace files: raw bytes, transparently gunzipped, UTF-8 text, the first 64 KiB."""

from __future__ import annotations

import gzip
import io
import zlib
from typing import IO

from pdplan.errors import InputError

__all__ = ["broken_off", "holds_hex_field", "is_gzip", "open_binary", "open_text", "read_head"]

_GZIP_MAGIC = b"\x1f\x8b"  # RFC 1952 member header
_SCAN_BYTES = 4 << 20  # bytes a hex scan reads at a time (holds_hex_field): 4 MiB
# bytes after which a field starts (CSV delimiters, quote, whitespace, a sign, line ends)
_FIELD_STARTS = frozenset(bytes([c]) for c in b',;\t|" +-\n\r')
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


def holds_hex_field(path: str) -> bool:
    """Whether a field of the (gunzipped) file may start with 0x / 0X, after a delimiter, a
    quote, a space, a sign or a line start: what Arrow's integer parser reads as hex. A block
    scan for the rare 'x' / 'X' (memchr speed: ~30 ms per 64 MB here), each hit checked;
    an id such as 'a0x1' is no hit. A file that cannot be read to its end (a gzip cut short)
    is a hit too: the careful pass names the line where it breaks off."""
    try:
        with open_binary(path) as f:
            prev = b"\n\n"  # the two bytes before the block: the file starts a line
            while block := f.read(_SCAN_BYTES):
                text = prev + block
                if _hex_in(text):
                    return True
                prev = text[-2:]  # a hit's '0' and the byte before it may end this block
    except (OSError, EOFError, zlib.error):
        return True
    return False


def _hex_in(text: bytes) -> bool:
    """An 'x' / 'X' past text's first two bytes with a '0' before it and a field start before
    that."""
    for x in (b"x", b"X"):
        at = text.find(x, 2)
        while at >= 0:
            if text[at - 1] == 48 and text[at - 2 : at - 1] in _FIELD_STARTS:  # 48: '0'
                return True
            at = text.find(x, at + 1)
    return False


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
