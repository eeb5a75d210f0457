"""Text helpers every layer's messages share (no pdplan imports: usable from any layer)."""

from __future__ import annotations

__all__ = ["count", "foreign_digits", "gpus"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 GPU', '2 GPUs', '0 GPUs': n and the noun, singular only for exactly one."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def gpus(n: int) -> str:
    """'1 GPU' / '8 GPUs' (a layout of one GPU printed '1 GPUs')."""
    return count(n, "GPU")


def foreign_digits(text: str) -> str | None:
    """Why `text` (a spec) is refused when it holds a digit other than ASCII 0-9 ('４', '٤',
    '²'): int() and float() read full-width and other scripts' digits as numbers ('tp４' ran
    as tp4), so a pasted or IME-typed value is refused rather than guessed; None when every
    digit is 0-9. The caller names the spec: f"layout {text!r}: {why}"."""
    odd = sorted({c for c in text if c.isnumeric() and not "0" <= c <= "9"}, key=text.index)
    if not odd:
        return None
    verb = "is not an ASCII digit" if len(odd) == 1 else "are not ASCII digits"
    return f"{', '.join(repr(c) for c in odd)} {verb}; write numbers with 0-9"
