"""Black-box audit 37: PP memory is the heaviest stage's, not the first stage's."""

from __future__ import annotations

import pytest

from pdplan.catalog.models import get_model
from pdplan.parallel.layout import Layout
from pdplan.perf.weights import weight_bytes_per_gpu

GiB = 2**30


def test_dense_first_layers_do_not_shrink_a_pp_stage() -> None:
    # DeepSeek-V3 FP8, ~625 GiB of weights: 8 GPUs hold >= 1/8 of them each whatever the
    # split; tp1-pp8's first stage has 3 dense-FFN layers (first_k_dense_replace) and was
    # priced as the whole layout (57 GiB per GPU, "fits" on 8 x H100); the later stages are
    # 8 MoE layers (7 on the last, with the LM head), ~82 GiB
    m = get_model("deepseek-v3")
    total = weight_bytes_per_gpu(m, Layout(tp=8)) * 8  # TP-split, nothing replicated but tiny
    pp8 = weight_bytes_per_gpu(m, Layout(pp=8))
    assert pp8 >= total / 8
    assert pp8 / GiB == pytest.approx(85.7, abs=1.0)


def test_uniform_model_stage_unchanged() -> None:
    # every layer alike: the first stage (one extra layer, with the embedding) is the heaviest
    m = get_model("llama-3.1-70b")
    lay = Layout(tp=4, pp=3)  # 80 layers -> 27 / 27 / 26
    per_layer = weight_bytes_per_gpu(m, Layout(tp=4)) - 2 * m.vocab_size * m.hidden_size * 2 / 4
    per_layer /= m.num_layers
    emb = m.vocab_size * m.hidden_size * 2.0 / 4
    assert weight_bytes_per_gpu(m, lay) == pytest.approx(27 * per_layer + emb)
