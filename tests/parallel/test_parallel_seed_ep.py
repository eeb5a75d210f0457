"""The seed rule's EP leaves an expert TP that divides the expert width; long context -> CP."""

from __future__ import annotations

import pytest

from pdplan.catalog.models import get_model
from pdplan.errors import ConfigError
from pdplan.parallel.search import seed_rule


def test_long_context_turns_nodes_into_cp_before_the_layer_check() -> None:
    # 512 GPUs = TP8 x 64 nodes: PP=64 > 61 layers, but at 131k tokens those nodes are CP
    pick = seed_rule(get_model("deepseek-v3"), 512, 8, 131072)
    assert pick.layout is not None and pick.layout.cp == 64 and pick.layout.pp == 1


def test_ep_keeps_expert_tp_dividing_the_width() -> None:
    m = get_model("deepseek-v3")  # 256 experts of width 2048
    lay = seed_rule(m, 512, 8, 131072).layout
    assert lay is not None
    stage = lay.tp * lay.cp
    assert 2048 % (stage // lay.ep) == 0
    with pytest.raises(ConfigError, match="expert FFN width 2048"):
        seed_rule(m, 480, 8, 131072)  # 480 / EP is never a divisor of 2048


def test_cli_lists_layouts_when_the_seed_rule_has_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pdplan.cli import main

    argv = ["parallel", "-m", "deepseek-v3", "-g", "h200", "--gpus", "24", "--context", "131072"]
    assert main([*argv, "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["seed_rule"]["layout"] is None and "expert FFN width" in data["seed_rule"]["reason"]
    assert data["layouts"] and data["best_layout"]
