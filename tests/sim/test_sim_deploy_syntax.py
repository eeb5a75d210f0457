"""Deployment strings: layout-syntax mistakes get a message that quotes the input as typed and
says the spelling that works (parts joined with '-', pools with '+', counts as xN / NP:)."""

from __future__ import annotations

import pytest

from pdplan.errors import ConfigError
from pdplan.sim import parse_deployment


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tp4ep4", "a layout's parts are joined with '-': write 'tp4-ep4'"),
        ("tp8pp2", "write 'tp8-pp2'"),
        ("dp8ep8", "write 'dp8-ep8'"),
        (
            "TP4EP4",
            "cannot read layout 'TP4EP4': a layout's parts are joined with '-': write 'TP4-EP4'",
        ),
        ("tp4ep4x2", "write 'tp4-ep4x2'"),
        ("1P:tp4ep4+1D:tp4", "write '1P:tp4-ep4+1D:tp4'"),
        (
            "tp4,ep4",
            "',' joins only P / D pools ('4P:tp4,8D:tp8'); a layout's parts are "
            "joined with '-' ('tp4-ep4'), aggregated pools with '+' ('tp4+ep4')",
        ),
        ("4P:tp4,ep4+8D:tp8", "('4P:tp4-ep4')"),
        ("tp4x-1", "cannot read layout 'tp4x-1': the instance count after 'x' must be a whole"),
        (
            "tp4x2x2",
            "pool 'tp4x2x2' gives its instance count (xN) more than once; write it "
            "once, at the end: tp4x4",
        ),
        (
            "1P:tp4x2+1D:tp4",
            "pool '1P:tp4x2': a P / D pool gives its instance count before "
            "the colon, not as xN: write 2P:tp4",
        ),
        ("2P4D", "write each pool with its layout, joined by '+': '2P:tpN+4D:tpN'"),
        ("2p4d:tp8", "'2P:tpN+4D:tpN' (e.g. '2P:tp4+4D:tp4')"),
        (
            "2P:TQ4+2D:tp8",
            "cannot read layout part 'TQ4'; use tpN, dpN, ppN, epN, etpN, cpN or "
            "sp, joined with '-'",
        ),
    ],
)
def test_layout_syntax_errors_say_the_spelling_that_works(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_deployment(text)
    assert message in str(exc.value)
    assert str(exc.value).startswith(f"deployment {text!r}")
    for mangled in ("tp4--1", "'tp4-2'", "'tp4ep4' in"):
        assert mangled not in str(exc.value)  # no echo of an internal rewrite of the input


def test_the_documented_spellings_still_parse() -> None:
    pools = parse_deployment("4p:tp4,8d:tp8-pp2")  # ',' between P / D pools
    assert [(p.role, p.count, str(p.layout)) for p in pools] == [
        ("prefill", 4, "tp4"),
        ("decode", 8, "tp8-pp2"),
    ]
    (pool,) = parse_deployment("tp4-ep4x2")
    assert (pool.count, pool.layout.tp, pool.layout.ep) == (2, 4, 4)
    assert parse_deployment("TP4xEP4")[0].layout.ep == 4  # 'x' also separates parts
    assert [p.count for p in parse_deployment("tp4x2+tp8")] == [2, 1]


def test_layout_syntax_error_is_none_for_readable_parts() -> None:
    from pdplan.sim.deploy import layout_syntax_error

    assert layout_syntax_error("tp4-ep4") is None
    assert layout_syntax_error("tp=4,pp=2") is None
    assert layout_syntax_error("tp4-ep3") is None  # a value Layout.parse refuses, not syntax
    assert layout_syntax_error("tp4ep4") == "a layout's parts are joined with '-': write 'tp4-ep4'"
    assert "part 'foo'" in (layout_syntax_error("tp4-foo") or "")
