"""GPUs that published serving benchmarks run on (V100, T4, A10G, A40, RTX A6000, RTX 6000 Ada,
L20, MI250X, MI210): their device-query names, datasheet dense rates, the FP16-only parts'
dtype fallback, and a clear refusal when a model does not fit."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pdplan.catalog import get_gpu, get_model
from pdplan.catalog.gpus import list_gpus
from pdplan.errors import ConfigError, DoesNotFitError
from pdplan.parallel.layout import Layout
from pdplan.perf.costmodel import CostModel
from pdplan.perf.memory import GiB, plan_memory
from pdplan.plan.steady import estimate_deployment

NEW = (
    "v100-sxm2",
    "v100-sxm2-16gb",
    "v100-pcie",
    "v100-pcie-16gb",
    "t4",
    "a10g",
    "a40",
    "rtx-a6000",
    "rtx-6000-ada",
    "l20",
    "mi250x",
    "mi210",
)


def test_new_keys_listed() -> None:
    assert set(NEW) <= set(list_gpus())


@pytest.mark.parametrize(
    ("name", "key"),
    [
        # nvidia-smi / rocm-smi / torch.cuda.get_device_name() spellings
        ("Tesla V100-SXM2-32GB", "v100-sxm2"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"),
        ("Tesla V100-PCIE-32GB", "v100-pcie"),
        ("Tesla V100-PCIE-16GB", "v100-pcie-16gb"),
        ("Tesla T4", "t4"),
        ("NVIDIA T4", "t4"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A40", "a40"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("NVIDIA L20", "l20"),
        ("AMD Instinct MI250X", "mi250x"),
        ("AMD Instinct MI250X/MI250", "mi250x"),  # HIP's name for the MI250X / MI250 device
        ("AMD Instinct MI250X / MI250", "mi250x"),  # libdrm amdgpu.ids
        ("AMD Instinct MI210", "mi210"),
        # keys, short names, other spellings
        *((k, k) for k in NEW),
        ("V100", "v100-sxm2"),
        ("v100_sxm2", "v100-sxm2"),
        ("V100-SXM2-16GB", "v100-sxm2-16gb"),  # a memory suffix that names its own row stays
        ("V100-PCIE-16GB", "v100-pcie-16gb"),
        ("v100-16gb", "v100-sxm2-16gb"),
        ("A10G", "a10g"),
        ("a6000", "rtx-a6000"),
        ("rtx_6000_ada", "rtx-6000-ada"),
        ("MI250X", "mi250x"),
        ("mi250x_oam", "mi250x"),
        ("Instinct MI210", "mi210"),
    ],
)
def test_device_query_names(name: str, key: str) -> None:
    assert get_gpu(name).name == key


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("a10", "a10"),
        ("NVIDIA A10", "a10"),
        ("l40", "l40"),
        ("NVIDIA L40", "l40"),
        ("l40s", "l40s"),
        ("l4", "l4"),
        ("rtx-pro-6000", "rtx-pro-6000"),
        ("rtx6000pro", "rtx-pro-6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
        ("RTX 4090", "rtx-4090"),
        ("a100", "a100-sxm"),
        ("mi300x", "mi300x"),
        ("h20", "h20"),
    ],
)
def test_existing_names_unchanged(name: str, key: str) -> None:
    assert get_gpu(name).name == key


@pytest.mark.parametrize("name", ["mi250", "Tesla V100S-PCIE-32GB", "rtx 6000"])
def test_other_parts_are_not_guessed(name: str) -> None:
    """MI250 (104 CUs a GCD), V100S (130 TFLOP/s, 1,134 GB/s) and the ambiguous 'RTX 6000'
    (Turing Quadro or Ada) are different parts: refused, not mapped to a near name."""
    with pytest.raises(ConfigError, match="unknown GPU"):
        get_gpu(name)


def test_datasheet_dense_rates() -> None:
    # NVIDIA A40 datasheet: 149.7 | 299.4 (sparse) BF16, 299.3 | 598.6 INT8; halved = dense
    a40 = get_gpu("a40")
    assert (a40.bf16_tflops, a40.int8_tops, a40.fp8_tflops) == (149.7, 299.3, None)
    assert a40.hbm_tbps == 0.696
    # RTX A6000 datasheet "Tensor 309.7" is with sparsity: 84 SMs x 1800 MHz x 1024 = 154.8
    assert get_gpu("rtx-a6000").bf16_tflops == pytest.approx(84 * 1.8e9 * 1024 / 1e12, abs=0.1)
    # RTX 6000 Ada: FP8 1,457 with sparsity -> 728.5 dense; BF16 half of that (FP32 accumulate)
    ada = get_gpu("rtx-6000-ada")
    assert ada.fp8_tflops == pytest.approx(1457 / 2, abs=0.1) and ada.bf16_tflops == 364.2
    assert ada.hbm_tbps == 0.96
    t4 = get_gpu("t4")
    assert (t4.bf16_tflops, t4.int8_tops, t4.hbm_tbps, t4.tdp_w) == (65, 130, 0.32, 70)
    v = get_gpu("v100-sxm2")
    assert (v.bf16_tflops, v.hbm_tbps, v.tdp_w) == (125, 0.9, 300)
    assert get_gpu("v100-pcie").bf16_tflops == 112
    # MI250X: one GCD is half the 383 TFLOP/s, 3.2768 TB/s OAM
    gcd = get_gpu("mi250x")
    assert gcd.bf16_tflops == pytest.approx(383 / 2) and gcd.hbm_tbps == pytest.approx(3.2768 / 2)
    assert (gcd.vendor, gcd.hbm_gib, gcd.fp8_tflops) == ("AMD", 64, None)
    mi210 = get_gpu("mi210")
    assert (mi210.bf16_tflops, mi210.hbm_tbps, mi210.fp8_tflops) == (181, 1.6384, None)
    # A10G: the A10's memory, about half its tensor rate
    a10, a10g = get_gpu("a10"), get_gpu("a10g")
    assert a10g.hbm_tbps == a10.hbm_tbps and a10g.bf16_tflops < 0.6 * a10.bf16_tflops


def test_interconnects_follow_the_catalog_conventions() -> None:
    # PCIe cards without NVLink: the node's 8 GPUs talk at the PCIe figure
    for key in ("t4", "v100-pcie", "a10g", "rtx-6000-ada", "l20"):
        g = get_gpu(key)
        assert (g.scaleup_gbps, g.scaleup_domain, g.gpus_per_node) == (g.pcie_gbps, 8, 8), key
    assert get_gpu("t4").pcie_gbps == 16  # PCIe Gen3 x16 each way
    # NVLink-bridged pairs: domain 2 at the bridge's 112.5 GB/s bidirectional / 2
    for key in ("a40", "rtx-a6000"):
        g = get_gpu(key)
        assert (g.scaleup_gbps, g.scaleup_domain, g.gpus_per_node) == (112.5 / 2, 2, 8), key
    # V100 SXM2: NVLink 300 GB/s bidirectional, eight to a DGX-1
    v = get_gpu("v100-sxm2")
    assert (v.scaleup_gbps, v.scaleup_domain) == (150, 8)
    # MI210 Infinity Fabric hive of four
    assert (get_gpu("mi210").scaleup_domain, get_gpu("mi210").gpus_per_node) == (4, 8)


def test_sixteen_gb_rows_differ_only_in_memory() -> None:
    for big, small in (("v100-sxm2", "v100-sxm2-16gb"), ("v100-pcie", "v100-pcie-16gb")):
        b, s = get_gpu(big), get_gpu(small)
        assert s.hbm_gib == pytest.approx(16160 / 1024, abs=0.01) and b.hbm_gib == 32
        assert (s.bf16_tflops, s.hbm_tbps, s.scaleup_gbps) == (
            b.bf16_tflops,
            b.hbm_tbps,
            b.scaleup_gbps,
        )


@pytest.mark.parametrize("key", ["v100-sxm2", "v100-pcie", "t4"])
def test_fp16_only_parts_fall_back_to_the_fp16_rate(key: str) -> None:
    """Volta / Turing: no FP8 / FP4 / BF16 tensor cores; FP8 and FP4 GEMMs run at the FP16
    rate in the BF16 column (engines run these parts in FP16: same bytes per weight)."""
    g = get_gpu(key)
    assert g.fp8_tflops is None and g.fp4_tflops is None
    assert g.tflops("fp8") == g.tflops("fp4") == g.tflops("bf16") == g.bf16_tflops
    assert "FP16" in g.source


def test_volta_has_no_int8_tensor_path_turing_has() -> None:
    v, t = get_gpu("v100-sxm2"), get_gpu("t4")
    assert v.int8_tops is None and v.tflops("int8") == v.bf16_tflops
    assert t.tflops("int8") == 130


def test_cdna2_has_no_fp8() -> None:
    for key in ("mi250x", "mi210"):
        g = get_gpu(key)
        assert g.fp8_tflops is None and g.tflops("fp8") == g.bf16_tflops


@pytest.mark.parametrize("key", NEW)
def test_every_number_has_a_source(key: str) -> None:
    g = get_gpu(key)
    assert g.source and g.mamf_bf16_tflops is None  # no measured MAMF: not guessed
    assert "ASSUMED" in g.source or "PRESS" in g.source  # nic / node size at least are assumed


def test_derived_a10g_and_press_l20_say_so() -> None:
    assert "ASSUMED BF16" in get_gpu("a10g").source
    assert get_gpu("l20").source.startswith("PRESS, medium confidence")


def test_llama70b_bf16_on_one_t4_does_not_fit() -> None:
    m, g = get_model("llama-3.1-70b"), get_gpu("t4")
    with pytest.raises(DoesNotFitError) as exc:
        plan_memory(m, g, Layout(tp=1), "bf16")
    msg = str(exc.value)
    assert "does not fit" in msg and "short by" in msg and "on t4" in msg
    assert exc.value.have_bytes <= 15.0 * GiB < exc.value.need_bytes
    with pytest.raises(DoesNotFitError, match="short by"):
        estimate_deployment(m, g, isl=512, osl=128, concurrency=1, layout="tp1")


def test_llama8b_bf16_needs_two_t4s() -> None:
    """8B in BF16 is 15 GiB of weights: more than a T4's 15 GiB with runtime and activations,
    so TP1 is refused and TP2 runs."""
    m, g = get_model("llama-3.1-8b"), get_gpu("Tesla T4")
    with pytest.raises(DoesNotFitError):
        estimate_deployment(m, g, isl=512, osl=128, concurrency=8, layout="tp1")
    est = estimate_deployment(m, g, isl=512, osl=128, concurrency=8, layout="tp2")["estimate"]
    assert math.isfinite(est["tpot_ms"]) and est["tpot_ms"] > 0 and est["ttft_ms"] > 0


@pytest.mark.parametrize("key", NEW)
def test_llama8b_estimates_on_every_new_gpu(key: str) -> None:
    g = get_gpu(key)
    est = estimate_deployment(
        get_model("llama-3.1-8b"), g, isl=512, osl=128, concurrency=8, layout="tp2"
    )["estimate"]
    assert math.isfinite(est["tpot_ms"]) and est["tpot_ms"] > 0
    assert math.isfinite(est["ttft_ms"]) and est["ttft_ms"] > 0


def test_decode_orders_by_memory_bandwidth() -> None:
    """Batch-1 decode of 8B at TP2 streams the weights: T4 (320 GB/s) slower than the A10 and
    A10G (600 GB/s), slower than the L40S (864 GB/s), slower than the V100 (900 GB/s HBM2)."""
    m, lay = get_model("llama-3.1-8b"), Layout(tp=2)

    def step(key: str) -> float:
        return CostModel(m, get_gpu(key), lay, "vllm").decode_step(1, 1024)

    assert step("t4") > step("a10g") >= step("a10") > step("l40s") > step("v100-sxm2")
    assert step("mi210") == pytest.approx(step("mi250x"), rel=0.1)  # same GCD and HBM


def test_trtllm_refused_on_cdna2() -> None:
    with pytest.raises(ConfigError, match="NVIDIA"):
        CostModel(get_model("llama-3.1-8b"), get_gpu("mi210"), Layout(tp=1), "trtllm")


@pytest.mark.parametrize("key", ["v100-sxm2", "v100-pcie-16gb", "t4"])
@pytest.mark.parametrize("dtype", ["fp8", "fp4", "mxfp4", "w4a8"])
def test_fp8_fp4_weights_refused_before_ampere(key: str, dtype: str) -> None:
    """No FP8 / FP4 weight kernels below compute capability 8.0: refused, naming the fix;
    BF16 (run as FP16) and INT4 (GPTQ / AWQ) still price."""
    m, g = get_model("llama-3.1-8b"), get_gpu(key)
    with pytest.raises(ConfigError, match=r"Ampere or newer.*FP16 tensor cores only.*int4"):
        CostModel(m, g, Layout(tp=2), "vllm", weight_dtype=dtype)
    for ok in ("bf16", "int4"):
        assert CostModel(m, g, Layout(tp=2), "vllm", weight_dtype=ok).decode_step(1, 1024) > 0


def test_fp8_weights_still_price_on_ampere_and_newer() -> None:
    m = get_model("llama-3.1-8b")
    for key in ("a10g", "a40", "a100-sxm", "l20", "mi250x"):
        g = get_gpu(key)
        assert not g.fp16_only
        assert CostModel(m, g, Layout(tp=1), "vllm", weight_dtype="fp8").decode_step(1, 1) > 0


def test_fit_hint_does_not_offer_fp8_weights_before_ampere() -> None:
    """8B BF16 does not fit one T4 and FP8 weights would, but a T4 cannot run them: the hint
    offers TP2 only. On an Ada part (L40S) the same kind of miss is offered FP8 weights."""
    from pdplan.plan.layout_fit import fit_hint

    args = {"weight_dtype": None, "kv_dtype": "bf16"}
    t4 = fit_hint(get_model("llama-3.1-8b"), get_gpu("t4"), Layout(tp=1), "--layout", **args)
    assert "--weight-dtype fp8" not in t4 and "--layout tp2" in t4
    l40s = fit_hint(get_model("qwen2.5-32b"), get_gpu("l40s"), Layout(tp=1), "--layout", **args)
    assert "--weight-dtype fp8 on tp1" in l40s


def test_gpu_file_takes_fp16_only(tmp_path: Path) -> None:
    from pdplan.catalog.gpu_file import load_gpu_file
    from pdplan.errors import InputError

    f = tmp_path / "gpus.yaml"
    f.write_text("gpus:\n  - name: p40x\n    base: t4\n    fp16_only: true\n")
    assert load_gpu_file(f)["p40x"].fp16_only
    f.write_text("gpus:\n  - name: p40x\n    base: t4\n    fp16_only: 1\n")
    with pytest.raises(InputError, match="fp16_only' must be true or false"):
        load_gpu_file(f)


@pytest.mark.parametrize("key", ["v100-sxm2", "t4"])
def test_trtllm_refused_before_ampere(key: str) -> None:
    """TensorRT-LLM's supported hardware is Ampere and newer (Blackwell, Hopper, Ada, A100)."""
    with pytest.raises(ConfigError, match="Ampere and newer"):
        CostModel(get_model("llama-3.2-1b"), get_gpu(key), Layout(tp=1), "trtllm")
    assert CostModel(get_model("llama-3.2-1b"), get_gpu("a10g"), Layout(tp=1), "trtllm")
