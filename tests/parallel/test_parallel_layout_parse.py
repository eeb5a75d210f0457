"""Layout.parse: accepted spellings and clear refusals."""

from __future__ import annotations

import pytest

from pdplan.errors import ConfigError
from pdplan.parallel.layout import Layout


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("tp4", (4, 1, 1, 1)),
        ("tp8-ep8", (8, 1, 1, 8)),
        ("tp=4,pp=2", (4, 1, 2, 1)),
        ("dp8 ep8", (1, 8, 1, 8)),
        ("TP2-DP2-EP4", (2, 2, 1, 4)),
    ],
)
def test_parse(text: str, want: tuple[int, int, int, int]) -> None:
    lay = Layout.parse(text)
    assert (lay.tp, lay.dp, lay.pp, lay.ep) == want
    assert lay.gpus == lay.tp * lay.dp * lay.pp


@pytest.mark.parametrize("text", ["", "xx", "tp", "zz4", "tp4-ep3"])
def test_refusals_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        Layout.parse(text)
