"""Tests of the GPU catalog: numbers against gpus.csv, aliases, user YAML files, clusters."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pdplan.catalog.gpus import get_gpu, list_gpus, load_gpu_file, make_cluster
from pdplan.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[2]
GPUS_CSV = REPO.parent / "shared" / "data" / "reference" / "gpus.csv"
CALIB = REPO.parent / "shared" / "data" / "calibration" / "measured_serving.csv"

CSV_TO_KEY = {
    "A100-80GB-SXM": "a100-sxm",
    "H100-SXM": "h100-sxm",
    "H100-PCIe": "h100-pcie",
    "H200-SXM": "h200-sxm",
    "H20": "h20",
    "B200-SXM": "b200-sxm",
    "GB200 (per GPU, NVL72)": "gb200",
    "B300-SXM": "b300-sxm",
    "GB300 (per GPU, NVL72)": "gb300",
    "L40S": "l40s",
    "L4": "l4",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "MI355X": "mi355x",
    "Gaudi3": "gaudi3",
}
# usable capacity from the csv notes (nvidia-smi MiB / 1024), instead of the marketing GB
USABLE_GIB = {"gb200": 189471 / 1024, "b300-sxm": 275040 / 1024, "gb300": 284208 / 1024}
USABLE_GIB["l40s"] = 46068 / 1024
PCIE_CARDS = {"h100-pcie", "l40s", "l4"}  # csv domain 1; we use the 8-GPU node over PCIe


def _num(s: str) -> float | None:
    return float(s) if s.strip() else None


def _csv_rows() -> list[dict[str, str]]:
    if not GPUS_CSV.is_file():
        pytest.skip(f"shared data not present at {GPUS_CSV}")
    with GPUS_CSV.open(newline="") as f:
        return [r for r in csv.DictReader(f) if r["gpu"] in CSV_TO_KEY]


def test_required_gpus_present() -> None:
    for key in ("a100-sxm", "h100-sxm", "h100-pcie", "h200-sxm", "h20", "b200-sxm", "gb200"):
        assert key in list_gpus()
    for key in ("b300-sxm", "gb300", "l40s", "l4", "mi300x", "mi325x", "mi355x"):
        assert key in list_gpus()


def test_numbers_match_gpus_csv() -> None:
    rows = _csv_rows()
    assert len(rows) == len(CSV_TO_KEY)
    for r in rows:
        g = get_gpu(CSV_TO_KEY[r["gpu"]])
        assert g.bf16_tflops == float(r["bf16_dense_tflops"]), g.name
        assert g.fp8_tflops == _num(r["fp8_dense_tflops"]), g.name
        assert g.fp4_tflops == _num(r["fp4_dense_tflops"]), g.name
        assert g.int8_tops == _num(r["int8_dense_tops"]), g.name
        assert g.hbm_tbps == float(r["hbm_bw_tbps"]), g.name
        gib = USABLE_GIB.get(g.name, float(r["hbm_capacity_gb"]))
        assert g.hbm_gib == pytest.approx(gib, abs=0.01), g.name
        if r["scaleup_bw_unidir_GBps"]:
            assert g.scaleup_gbps == float(r["scaleup_bw_unidir_GBps"]), g.name
        else:
            assert "ASSUMED scale-up" in g.source, g.name
        dom = g.gpus_per_node if g.name in PCIE_CARDS else int(r["scaleup_domain_gpus"])
        assert (g.scaleup_domain, g.gpus_per_node) == (dom, int(r["gpus_per_node"])), g.name
        if r["scaleout_nic_per_gpu_gbps"]:
            assert g.nic_gbps == float(r["scaleout_nic_per_gpu_gbps"]), g.name
        else:
            assert "ASSUMED" in g.source and "nic" in g.source, g.name
        assert g.source.startswith(r["sources"]), g.name
        assert g.mamf_bf16_tflops == _num(r["mamf_bf16_tflops_measured"]), g.name


def test_hbm_hand_values() -> None:
    assert get_gpu("h100").hbm_gib == 80 and get_gpu("h200").hbm_gib == 141
    assert get_gpu("b200").hbm_gib == 180
    assert get_gpu("gb200").hbm_bytes == pytest.approx(189471 * 2**20, rel=1e-4)
    # 4.8 TB/s = 4.8e12 B/s; 800 Gb/s NIC = 100e9 B/s
    assert get_gpu("h200").hbm_bytes_per_s == 4.8e12
    assert get_gpu("b200").nic_bytes_per_s == 100e9


@pytest.mark.parametrize(
    ("alias", "key"),
    [
        ("h100_sxm", "h100-sxm"),
        ("b200_sxm", "b200-sxm"),
        ("b300_sxm", "b300-sxm"),
        ("GB200", "gb200"),
        ("gb300", "gb300"),
        ("H100", "h100-sxm"),
        ("h100-80gb", "h100-sxm"),
        ("H200-SXM", "h200-sxm"),
        ("h200", "h200-sxm"),
        ("B200 SXM", "b200-sxm"),
        ("MI355X", "mi355x"),
        # AIConfigurator system names (src/aiconfigurator/systems/*.yaml)
        ("h20_3e", "h20-3e"),
        ("rtx_pro_6000_server", "rtx-pro-6000"),
        ("rtxpro6000_blackwell_server", "rtx-pro-6000"),
        ("h800_sxm", "h800-sxm"),
        ("a100_sxm", "a100-sxm"),
        ("h20e_sxm", "h20e"),
        ("rtx_5090", "rtx-5090"),
        ("gb10", "gb10"),
        ("b60", "arc-pro-b60"),
        ("h100_nvl", "h100-nvl"),
        ("H200 NVL", "h200-nvl"),
        ("GH200", "gh200"),
        ("gh200_hbm3e", "gh200-144gb"),
        ("MI350X", "mi350x"),
        # device-query names: vendor prefixes and memory / module suffixes
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie"),
        ("NVIDIA A10", "a10"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA GB200", "gb200"),
        ("AMD Instinct MI300X", "mi300x"),
        ("mi355x_oam", "mi355x"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
    ],
)
def test_aliases(alias: str, key: str) -> None:
    assert get_gpu(alias).name == key


def test_a100_pcie_pairs_over_an_nvlink_bridge() -> None:
    """A100 80GB PCIe: the SXM die (same peak) with slower HBM2e; NVLink joins pairs only, so
    TP4 leaves the scale-up domain; vLLM keeps its A100 token budget of 2,048 on it."""
    from pdplan.catalog.models import get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel

    pcie, sxm = get_gpu("a100-pcie"), get_gpu("a100-sxm")
    assert pcie.bf16_tflops == sxm.bf16_tflops and pcie.hbm_tbps < sxm.hbm_tbps
    assert pcie.scaleup_domain == 2 and sxm.scaleup_domain == 8
    cm = CostModel(get_model("llama-3.1-8b"), pcie, Layout(tp=1), "vllm")
    assert cm.step_token_budget == 2048


def test_pcie_blackwell_card() -> None:
    """RTX PRO 6000 Blackwell Server: FP4 tensor cores, GDDR7, no NVLink (PCIe Gen5 between GPUs),
    usable memory as nvidia-smi reports it (97887 MiB)."""
    g = get_gpu("rtx-pro-6000")
    assert g.fp4_tflops == pytest.approx(2 * g.fp8_tflops)  # type: ignore[operator]
    assert g.hbm_gib == pytest.approx(97887 / 1024, abs=0.01)
    assert g.scaleup_gbps == g.pcie_gbps == 64
    assert g.hbm_tbps < get_gpu("h100-sxm").hbm_tbps
    h20e, h20 = get_gpu("h20-3e"), get_gpu("h20")
    assert (h20e.bf16_tflops, h20e.fp8_tflops) == (h20.bf16_tflops, h20.fp8_tflops)  # same die
    assert h20e.hbm_gib > h20.hbm_gib and h20e.hbm_tbps > h20.hbm_tbps


def test_sm12x_fp8_runs_at_fp16_rate_on_gb10() -> None:
    """DGX Spark's SM 12.1 has no double-rate FP8 (AIC gb10.yaml, mmapeak); FP4 is 2x."""
    g = get_gpu("dgx-spark")
    assert g.fp8_tflops == pytest.approx(g.bf16_tflops, rel=0.01)
    assert g.fp4_tflops == pytest.approx(2 * g.fp8_tflops, rel=0.01)
    assert (g.gpus_per_node, g.scaleup_domain) == (1, 1)
    assert get_gpu("b60").fp8_tflops is None  # Intel Arc Pro B60: no FP8 tensor cores


def test_calibration_systems_resolve() -> None:
    if not CALIB.is_file():
        pytest.skip("calibration csv not present")
    with CALIB.open(newline="") as f:
        systems = {r["system"] for r in csv.DictReader(f)}
    assert systems
    for s in systems:
        get_gpu(s)


def test_unknown_gpu_names_close_matches() -> None:
    with pytest.raises(ConfigError, match=r"unknown GPU 'h10'; did you mean h100"):
        get_gpu("h10")


def test_gb200_nvl72_domain() -> None:
    g = get_gpu("gb200")
    assert (g.scaleup_domain, g.gpus_per_node) == (72, 4)


def test_user_file_mapping_with_base(tmp_path: Path) -> None:
    f = tmp_path / "gpus.yaml"
    f.write_text("my-h100:\n  base: h100-sxm\n  nic_gbps: 200\n  aliases: [lab_h100]\n")
    extra = load_gpu_file(f)
    g = get_gpu("LAB_H100", extra=extra)
    assert g.name == "my-h100" and g.nic_gbps == 200 and g.bf16_tflops == 989
    assert "base h100-sxm" in g.source
    assert get_gpu("h100", extra=extra).nic_gbps == 400  # built-ins untouched
    f.write_text("capped-h100:\n  base: h100-sxm\n  mamf_bf16_tflops: 494.5\n")
    g = get_gpu("capped-h100", extra=load_gpu_file(f))  # a power-capped part's measured MAMF
    assert g.matmul_eta == pytest.approx(0.5)


def test_a_new_peak_on_a_base_keeps_its_measured_matmul_fraction(tmp_path: Path) -> None:
    f = tmp_path / "gpus.yaml"
    f.write_text("h2x:\n  base: h100-sxm\n  bf16_tflops: 1978\n  fp8_tflops: 3.958e3\n")
    g, h100 = get_gpu("h2x", extra=load_gpu_file(f)), get_gpu("h100-sxm")
    assert g.matmul_eta == pytest.approx(h100.matmul_eta)  # MAMF doubled with the peak
    assert g.mamf_bf16_tflops == pytest.approx(2 * h100.mamf_bf16_tflops)
    f.write_text("big:\n  base: h100-sxm\n  bf16_tflops: 1e3\n")  # YAML 1.1: '1e3' is text
    assert get_gpu("big", extra=load_gpu_file(f)).bf16_tflops == 1000.0


def test_user_file_list_full_entry_and_override_builtin(tmp_path: Path) -> None:
    f = tmp_path / "gpus.yaml"
    f.write_text(
        "- name: toy\n  bf16_tflops: 100\n  hbm_gib: 16\n  hbm_tbps: 1\n  scaleup_gbps: 50\n"
        "  scaleup_domain: 4\n  gpus_per_node: 4\n  nic_gbps: 100\n"
        "- name: h100-sxm\n  base: h100-sxm\n  hbm_tbps: 3.0\n"
        "- name: toy2\n  base: toy\n  hbm_gib: 32\n"
    )
    extra = load_gpu_file(f)
    assert get_gpu("toy", extra).fp8_tflops is None and get_gpu("toy", extra).vendor == "custom"
    assert get_gpu("h100", extra).hbm_tbps == 3.0  # user dict consulted first, by alias too
    assert get_gpu("toy2", extra).hbm_gib == 32 and get_gpu("toy2", extra).bf16_tflops == 100


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("g1:\n  base: h100\n  hbm_gb: 80\n", r"GPU 'g1': unknown field hbm_gb"),
        ("g1:\n  base: h100\n  hbm_tbps: fast\n", r"GPU 'g1': field 'hbm_tbps' must be a number"),
        ("g1:\n  base: h100\n  gpus_per_node: 2.5\n", r"'gpus_per_node' must be a whole number"),
        ("g1:\n  bf16_tflops: 10\n", r"GPU 'g1': missing hbm_gib, hbm_tbps"),
        ("g1:\n  base: nosuch\n", r"GPU 'g1': base: unknown GPU 'nosuch'"),
        ("- bf16_tflops: 1\n", r"entry #1 needs a name"),
        ("42\n", r"expected a list of GPUs"),
    ],
)
def test_user_file_errors_name_file_gpu_field(tmp_path: Path, text: str, match: str) -> None:
    f = tmp_path / "gpus.yaml"
    f.write_text(text)
    with pytest.raises(InputError, match=match) as e:
        load_gpu_file(f)
    assert str(e.value).startswith(str(f))


def test_user_file_unreadable_or_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read GPU file"):
        load_gpu_file(tmp_path / "missing.yaml")
    f = tmp_path / "bad.yaml"
    f.write_text("a: [1,\nb: 2\n")
    with pytest.raises(InputError, match="not valid YAML") as e:
        load_gpu_file(f)
    assert e.value.line is not None


def test_make_cluster() -> None:
    c = make_cluster("gb200", nodes=18)
    assert (c.total_gpus, c.domain, c.node_size) == (72, 72, 4)
    c = make_cluster("h100", nodes=2, nic_gbps=200)
    assert c.total_gpus == 16 and c.nic_bytes_per_s == 25e9  # 200 Gb/s / 8
    with pytest.raises(ConfigError, match="nodes must be a whole number"):
        make_cluster("h100", nodes=0)
    with pytest.raises(ConfigError, match="nic_gbps"):
        make_cluster("h100", nic_gbps=-1)


def test_bridged_pcie_hoppers_grace_hopper_and_mi350x() -> None:
    """NVL cards: half the SXM part's dense rate (lower clocks and power), the bridge as the
    scale-up domain; GH200: the SXM die's rates on one-GPU nodes; MI350X: MI355X at 2200 MHz."""
    sxm, nvl = get_gpu("h100-sxm"), get_gpu("h100-nvl")
    assert nvl.bf16_tflops < sxm.bf16_tflops and nvl.hbm_tbps > sxm.hbm_tbps
    assert (nvl.scaleup_domain, get_gpu("h200-nvl").scaleup_domain) == (2, 4)
    gh = get_gpu("gh200")
    assert gh.bf16_tflops == sxm.bf16_tflops and gh.gpus_per_node == gh.scaleup_domain == 1
    assert get_gpu("gh200-144gb").hbm_gib > gh.hbm_gib
    m350, m355 = get_gpu("mi350x"), get_gpu("mi355x")
    assert m350.bf16_tflops == pytest.approx(m355.bf16_tflops * 2200 / 2400, rel=1e-3)
    assert m350.matmul_eta == pytest.approx(m355.matmul_eta, rel=1e-3)  # type: ignore[arg-type]
