"""ModelSpec.kv_bytes_parts: the KV of a sequence split into growing, windowed and fixed parts
adds up to ModelSpec.kv_bytes for every built-in model."""

from __future__ import annotations

import pytest

from pdplan.catalog.models import get_model, list_models


@pytest.mark.parametrize("key", list_models())
def test_parts_add_up_to_kv_bytes_for_every_preset(key: str) -> None:
    m = get_model(key)
    for dtype in ("bf16", "fp8"):
        grow, windows, state = m.kv_bytes_parts(dtype)
        assert grow >= 0 and state >= 0 and all(w > 0 and b > 0 for w, b in windows)
        for n in (1, 100, 4096, 200_000):
            parts = grow * n + sum(b * min(n, w) for w, b in windows) + state
            assert parts == pytest.approx(m.kv_bytes(n, dtype), rel=1e-12, abs=1e-6), (key, n)


def test_parts_of_window_and_state_models() -> None:
    """gemma-3 (sliding layers), gpt-oss (half sliding), qwen3-next (linear state) and a dense
    model (all growing) split as their shapes say."""
    _, windows, _ = get_model("gemma-3-27b").kv_bytes_parts()
    assert [w for w, _ in windows] == [get_model("gemma-3-27b").sliding_window]
    grow, windows, state = get_model("llama-3.1-70b").kv_bytes_parts()
    assert (grow, windows, state) == (327_680.0, (), 0.0)
    assert get_model("qwen3-next-80b-a3b").kv_bytes_parts()[2] > 0
    g = get_model("gpt-oss-120b")
    grow, windows, _ = g.kv_bytes_parts()
    assert grow + sum(b for _, b in windows) == g.kv_bytes_per_token()
