"""Pipeline stage boundaries ride NVLink between stages of one domain, the NIC between domains."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.collectives import Links
from pdplan.perf.costmodel import CostModel

# NVLink 450e9 B/s, 1 us; NIC 50e9 B/s, 10 us; efficiencies 1; NVLink domains of 8 GPUs
LINKS = Links(450e9, 1e-6, 1.0, 50e9, 1e-5, 1.0, 8)
MSG = 1e8  # B of activations sent at each boundary
UP = 1e-6 + MSG / 450e9  # s, one NVLink send
NIC = 1e-5 + MSG / 50e9  # s, one NIC send


@pytest.mark.parametrize(
    ("pp", "stage_gpus", "expect"),
    [
        (1, 8, 0.0),  # no boundary
        (2, 4, UP),  # tp4-pp2: both stages in one 8-GPU domain
        (4, 2, 3 * UP),  # tp2-pp4: four stages of 2 in one domain
        (4, 4, 2 * UP + NIC),  # tp4-pp4: two domains of two stages, one boundary between them
        (2, 8, NIC),  # tp8-pp2: a stage fills a domain, so the boundary crosses
        (3, 16, 2 * NIC),  # stages wider than a domain: every boundary crosses
    ],
)
def test_boundaries_by_placement(pp: int, stage_gpus: int, expect: float) -> None:
    """Stages in rank order: floor(8 / stage_gpus) per domain, ceil(pp / that) - 1 boundaries
    between domains on the NIC, the other pp - 1 - those on NVLink."""
    assert LINKS.pp_boundaries(MSG, pp, stage_gpus) == pytest.approx(expect, rel=1e-12)


def test_pcie_only_parts_keep_the_nic() -> None:
    """A domain of 1 (no NVLink): every boundary is priced on the NIC, as before."""
    pcie = Links(64e9, 1e-6, 1.0, 50e9, 1e-5, 1.0, 1)
    assert pcie.pp_boundaries(MSG, 2, 1) == pytest.approx(NIC, rel=1e-12)


def test_pp_inside_a_node_is_cheaper_than_across_nodes() -> None:
    """Llama-3.1-70B tp4-pp2 on H100 (8-GPU NVLink domain) prefilling 8192 tokens: the same
    step with the boundary forced onto the NIC (domain 4: each stage its own domain) is slower
    by the NIC send minus the NVLink send of 8192 x 8192 x 2 B = 134 MB."""
    model, gpu, lay = get_model("llama-3.1-70b"), get_gpu("h100-sxm"), Layout(tp=4, pp=2)
    inside = CostModel(model, gpu, lay, "vllm")
    across = CostModel(model, gpu, lay, "vllm", scaleup_domain=4)
    t_in, t_out = inside.prefill_time(8192), across.prefill_time(8192)
    assert t_out > t_in
