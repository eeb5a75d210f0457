"""Text helpers every layer's messages share (no pdplan imports: usable from any layer)."""

from __future__ import annotations

__all__ = ["count", "gpus"]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 GPU', '2 GPUs', '0 GPUs': n and the noun, singular only for exactly one."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def gpus(n: int) -> str:
    """'1 GPU' / '8 GPUs' (a layout of one GPU printed '1 GPUs')."""
    return count(n, "GPU")
