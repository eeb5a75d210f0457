"""Hand-derived physics checks of the L1 cost model: weights, KV, memory, roofline, collectives."""

from __future__ import annotations

import pytest

from pdplan.catalog.gpus import get_gpu
from pdplan.catalog.models import get_model
from pdplan.parallel.comm import comm_table, comm_totals
from pdplan.parallel.layout import Layout
from pdplan.perf.collectives import Links
from pdplan.perf.costmodel import CostModel
from pdplan.perf.kv_transfer import kv_transfer
from pdplan.perf.memory import GiB, kv_bytes_per_token_per_gpu, plan_memory
from pdplan.perf.step import BatchShape
from pdplan.perf.weights import weight_bytes_per_gpu

# Llama-3.1-8B (HF config): h 4096, L 32, 32 heads / 8 KV heads of 128, I 14336, vocab 128256,
# untied embeddings. Per layer (norms left out, 0.003 %):
#   attention q,o 4096x4096 + k,v 4096x1024 = 41,943,040; FFN 3 x 4096 x 14336 = 176,160,768
L8_ATTN, L8_FFN, L8_EMB = 41_943_040, 176_160_768, 128_256 * 4096
L8_LAYERS = 32 * (L8_ATTN + L8_FFN)  # 6,979,321,856 params in the decoder layers


def test_llama8b_weight_bytes_by_dtype_and_pp() -> None:
    m = get_model("llama-3.1-8b")
    # HF's 8,030,261,248 less the 32 x 2 x 4096 + 4096 norm weights
    assert m.active_params == L8_LAYERS + 2 * L8_EMB == 8_030_261_248 - 266_240
    assert weight_bytes_per_gpu(m, Layout(tp=1), "bf16") == 2 * (L8_LAYERS + 2 * L8_EMB)
    # FP8 layers are 1 B/param; embedding + LM head stay BF16 (2 B)
    assert weight_bytes_per_gpu(m, Layout(tp=1), "fp8") == L8_LAYERS + 2 * 2 * L8_EMB
    # TP2 halves everything (vocab-parallel embedding too)
    assert weight_bytes_per_gpu(m, Layout(tp=2), "fp8") == (L8_LAYERS + 4 * L8_EMB) / 2
    # PP2: 16 layers + the embedding on stage 0, 16 layers + the LM head on stage 1
    assert weight_bytes_per_gpu(m, Layout(pp=2), "bf16") == 2 * (L8_LAYERS / 2 + L8_EMB)


def test_deepseek_v3_params_and_tp8_fp8_weights() -> None:
    m = get_model("deepseek-v3")
    h = 7168
    # MLA block: q_a h x 1536, q_b 1536 x 128 x 192, kv_a h x (512 + 64),
    # kv_b 512 x 128 x (128 + 128), o 128 x 128 x h
    attn = h * 1536 + 1536 * 128 * 192 + h * 576 + 512 * 128 * 256 + 128 * 128 * h
    assert attn == 187_105_280 == m.attn_params("full")
    dense = 3 * h * 18432  # first 3 layers: dense FFN
    expert = 3 * h * 2048  # one routed or shared expert
    router = h * 256
    emb = 129_280 * h  # untied: embedding + LM head
    total = 61 * attn + 3 * dense + 58 * (257 * expert + router) + 2 * emb
    active = 61 * attn + 3 * dense + 58 * (9 * expert + router) + 2 * emb  # 8 routed + 1 shared
    assert (total, m.active_params) == (671_025_397_760, active)  # "671B", "37B activated"
    # TP8, FP8 weights: attention / dense / experts / shared split 8 ways at 1 B; router BF16
    # replicated; embeddings BF16 split 8 ways
    per_gpu = (61 * attn + 3 * dense + 58 * 257 * expert) / 8 + 58 * router * 2 + 2 * emb * 2 / 8
    assert weight_bytes_per_gpu(m, Layout(tp=8), "fp8") == per_gpu == 84_309_401_600


def test_llama8b_h100_kv_capacity_by_hand() -> None:
    m, g = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    plan = plan_memory(m, g, Layout(tp=1), "bf16")
    hbm = 80 * GiB
    # activations for an 8192-token chunk: (4 h + 2 I) x 2 B per token + 256 rows x vocab x 4 B
    act = 8192 * (4 * 4096 + 2 * 14336) * 2 + 256 * 128_256 * 4
    assert plan.activation_bytes == act == 869_531_648
    # vLLM 0.9 of the device; 1.5 GiB runtime; weights 16.06 GB
    kv_free = hbm - 2 * (L8_LAYERS + 2 * L8_EMB) - act - 1.5 * GiB - 0.1 * hbm
    assert plan.kv_bytes == pytest.approx(kv_free, abs=1.0)
    per_tok = 2 * 32 * 8 * 128 * 2  # K and V x layers x KV heads x head_dim x 2 B = 131,072
    assert plan.kv_bytes_per_token == per_tok
    assert plan.kv_capacity_tokens == int(kv_free / per_tok) == 448_374


def test_kv_bytes_per_gpu_under_pp_tp_and_mla() -> None:
    m70 = get_model("llama-3.1-70b")  # 2 x 80 x 8 x 128 x 2 B = 327,680 B / token
    # PP3 over 80 layers: 27 / 27 / 26 -> the largest stage holds 27 layers; TP4: 2 KV heads
    assert kv_bytes_per_token_per_gpu(m70, Layout(tp=4, pp=3)) == 327_680 * 27 / 80 / 4
    # TP32 > 8 KV heads: each rank still holds a whole head (replicated 4 ways); CP2 halves
    assert kv_bytes_per_token_per_gpu(m70, Layout(tp=32)) == 327_680 / 8
    assert kv_bytes_per_token_per_gpu(m70, Layout(tp=8, cp=2)) == 327_680 / 8 / 2
    ds = get_model("deepseek-v3")  # MLA latent (512 + 64) x 61 layers, replicated on TP ranks
    assert kv_bytes_per_token_per_gpu(ds, Layout(tp=8), "fp8") == 576 * 61 * 1


def _gemm_bytes(k: int, n: int, wb: float) -> float:
    """Batch-1 GEMM traffic: k x n weights at wb B + (k + n) BF16 activations, B."""
    return k * n * wb + (k + n) * 2.0


def test_llama8b_batch1_decode_is_the_weight_stream() -> None:
    m, g = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    cm = CostModel(m, g, Layout(tp=1))
    e = cm.eff
    bw = 3.35e12 * e.mem_eta  # H100 SXM 3.35 TB/s x fitted mem_eta
    # per layer: QKV+O as one (4096 x 10240) stream, gate/up (4096 x 28672), down (14336 x 4096)
    layer = _gemm_bytes(4096, 10240, 2) + _gemm_bytes(4096, 28672, 2) + _gemm_bytes(14336, 4096, 2)
    b = cm.breakdown(BatchShape(decode_seqs=1, decode_ctx=1000))
    assert b.gemm == pytest.approx(32 * layer / bw, rel=1e-12)
    assert b.lm_head == pytest.approx(_gemm_bytes(4096, 128_256, 2) / bw, rel=1e-12)
    # attention: 1000 tokens x 8 KV heads x (K + V) 256 x 2 B per layer, at attn_mem_eta
    kv = 1000 * 8 * 256 * 2.0
    assert b.attention == pytest.approx(32 * kv / (3.35e12 * e.attn_mem_eta), rel=1e-12)
    # overhead: step + kernel launches (kernels_per_layer x 32) + one sequence's host work
    over = e.step_s + e.kernel_s * e.kernels_per_layer * 32 + e.seq_s
    assert b.overhead == pytest.approx(over, rel=1e-12) and b.comm == 0.0
    # floor: never faster than 16.06 GB of weights at the datasheet 3.35 TB/s (4.79 ms)
    assert b.total > 2 * (L8_LAYERS + 2 * L8_EMB) / 3.35e12


def test_llama8b_fp8_decode_streams_one_byte_per_weight() -> None:
    m, g = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    cm = CostModel(m, g, Layout(tp=1), weight_dtype="fp8")
    e = cm.eff
    wb = 1.0 / e.fp8_stream_eta  # FP8 weights stream at fp8_stream_eta of mem_eta
    layer = (
        _gemm_bytes(4096, 10240, wb) + _gemm_bytes(4096, 28672, wb) + _gemm_bytes(14336, 4096, wb)
    )
    b = cm.breakdown(BatchShape(decode_seqs=1, decode_ctx=1000))
    assert b.gemm == pytest.approx(32 * layer / (3.35e12 * e.mem_eta), rel=1e-12)


def test_llama8b_prefill_flops_by_hand() -> None:
    m, g = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    cm = CostModel(m, g, Layout(tp=1))
    e, t = cm.eff, 8192
    pairs = t * (t + 1) / 2  # causal query-key pairs of one 8192-token prompt
    b = cm.breakdown(BatchShape(prefill_seqs=1, prefill_tokens=t, prefill_pairs=pairs))
    peak = 989e12  # H100 SXM dense BF16; its measured MAMF share is the fit GPUs' (x1)
    # GEMMs: 2 FLOP per param per token at peak x gemm_eta x M / (M + m_half)
    eta = e.gemm_eta * t / (t + e.gemm_m_half)
    assert b.gemm == pytest.approx(2.0 * L8_LAYERS * t / (peak * eta), rel=1e-12)
    # attention: QK^T + PV = 2 FLOP x 32 heads x (128 + 128) per pair per layer, at attn_eta
    flops = pairs * 2 * 32 * 256 * 32
    assert b.attention == pytest.approx(flops / (peak * e.attn_eta), rel=1e-12)


def test_tp2_decode_pays_two_ring_all_reduces_per_layer() -> None:
    m, g = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    cm = CostModel(m, g, Layout(tp=2))
    e = cm.eff
    # batch 1: 4096 x 2 B = 8 KiB per all-reduce over 2 ranks on NVLink 450 GB/s:
    # alpha + 2 (n-1)/n x bytes / (bw x coll_eta), after attention and after the FFN, x 32
    one = e.coll_alpha_s + 2 * 1 / 2 * 8192 / (450e9 * e.coll_eta)
    b = cm.breakdown(BatchShape(decode_seqs=1, decode_ctx=1000))
    assert b.comm == pytest.approx(64 * one, rel=1e-12)


def test_hierarchical_all_gather_delivers_every_remote_byte() -> None:
    # 16 GPUs in two 8-GPU NVLink domains, alpha 0, eta 1: every GPU starts with M/16 and
    # ends with M, so it receives 15/16 M: across domains (k-1)/k x M/d = M/16 on its NIC,
    # then inside its domain (d-1)/d x M = 7/8 M on NVLink. Before the fix the NVLink part
    # gathered only M/k (7/16 M): half the bytes missing.
    links = Links(450e9, 0.0, 1.0, 50e9, 0.0, 1.0, 8)
    msg = 1e9
    expect = 7 / 8 * msg / 450e9 + 1 / 16 * msg / 50e9
    assert links.all_gather(msg, 16) == pytest.approx(expect, rel=1e-12)
    # the same bytes a hierarchical all-reduce's gather half moves (AR = RS + AG)
    ar = links.all_reduce(msg, 16)
    assert ar == pytest.approx(2 * 7 / 8 * msg / 450e9 + 2 * 1 / 2 * msg / 8 / 50e9)
    # inside a server of NVLink pairs (H100 NVL: domain 2, 8 per node, PCIe 64 GB/s)
    nvl = Links(300e9, 0.0, 1.0, 50e9, 0.0, 1.0, 2, 8, 64e9)
    assert nvl.all_gather(msg, 8) == pytest.approx(1 / 2 * msg / 300e9 + 3 / 4 * msg / 2 / 64e9)


def test_cross_domain_all_to_all_sends_the_remote_share_on_the_nic() -> None:
    # 16 ranks, 8 a domain: a rank's send S goes evenly to its 15 peers, 8 of them remote,
    # so 8/15 S leaves over the NIC and 7/15 S over NVLink (not 8/16: the rank itself is no
    # destination of S)
    links = Links(450e9, 0.0, 1.0, 50e9, 0.0, 1.0, 8)
    s = 1e9
    assert links.all_to_all(s, 16) == pytest.approx(8 / 15 * s / 50e9, rel=1e-12)
    assert links.all_to_all(s, 8) == pytest.approx(s / 450e9, rel=1e-12)


def test_kv_transfer_time_by_hand() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("h100-sxm")
    # 1000 tokens x 327,680 B; prefill TP4 sends 4 shards, decode TP16 receives on 8 (8 KV
    # heads): the 4 senders set the time; 400 Gb/s NIC = 50 GB/s x 0.85 + 20 us
    t = kv_transfer(m, 1000, gpu=g, prefill_layout=Layout(tp=4), decode_layout=Layout(tp=16))
    assert (t.total_bytes, t.senders, t.receivers) == (327_680_000, 4, 8)
    assert t.time_s == pytest.approx(20e-6 + 327_680_000 / 4 / (50e9 * 0.85), rel=1e-12)
    fp8 = kv_transfer(m, 1000, kv_dtype="fp8", link_gbps=100, efficiency=1.0, latency_s=0.0)
    assert fp8.time_s == pytest.approx(163_840_000 / 12.5e9, rel=1e-12)  # 1 link, 1 B / value


def test_comm_table_tp8_bytes_by_hand() -> None:
    m = get_model("llama-3.1-70b")
    ops = comm_table(m, Layout(tp=8), 4096)
    # 2 all-reduces x 80 layers of 4096 tokens x 8192 x 2 B = 64 MiB each; ring wire 2 x 7/8
    msg = 4096 * 8192 * 2
    assert [op.bytes_per_call for op in ops] == [msg, msg]
    tot = comm_totals(ops, 4096, 80)
    assert tot["bytes_per_step"] == pytest.approx(160 * 2 * 7 / 8 * msg, rel=1e-12)
    assert tot["bytes_per_token_layer"] == pytest.approx(2 * 2 * 7 / 8 * 8192 * 2, rel=1e-12)
