"""pdplan._text (black-box pass 38): counts in messages, singular only for exactly one."""

from __future__ import annotations

from pdplan._text import count, gpus


def test_count_is_singular_only_for_one() -> None:
    assert [gpus(0), gpus(1), gpus(2)] == ["0 GPUs", "1 GPU", "2 GPUs"]
    assert count(1, "client") == "1 client" and count(3, "box", "boxes") == "3 boxes"
