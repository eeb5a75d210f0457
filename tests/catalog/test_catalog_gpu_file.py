"""--gpu-file: aliases that shadow built-ins, name vs key, bases defined later or in a cycle,
duplicate YAML keys, MAMF above the peak, empty names."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.catalog.gpus import USER_GPUS, get_gpu, load_gpu_file
from pdplan.cli import main
from pdplan.errors import InputError

TOY = (
    "  bf16_tflops: 100\n  hbm_gib: 16\n  hbm_tbps: 1\n  scaleup_gbps: 50\n"
    "  scaleup_domain: 4\n  gpus_per_node: 4\n  nic_gbps: 100\n"
)


@pytest.fixture(autouse=True)
def _no_user_gpus() -> None:
    USER_GPUS.clear()


def _load(tmp_path: Path, text: str) -> dict:
    f = tmp_path / "gpus.yaml"
    f.write_text(text)
    return load_gpu_file(f)


def _refused(tmp_path: Path, text: str, match: str) -> InputError:
    with pytest.raises(InputError, match=match) as e:
        _load(tmp_path, text)
    assert str(e.value).startswith(str(tmp_path / "gpus.yaml"))
    return e.value


@pytest.mark.parametrize("alias", ["h200", "h200-sxm", "H200_141GB", "nvidia-h200"])
def test_an_alias_may_not_take_a_builtin_name(tmp_path: Path, alias: str) -> None:
    text = f"mygpu:\n  base: h100-sxm\n  aliases: [{alias}]\n"
    _refused(tmp_path, text, "already names the built-in h200-sxm")


def test_an_explicit_override_keeps_or_adds_its_own_aliases(tmp_path: Path) -> None:
    extra = _load(tmp_path, "h200-sxm:\n  base: h200-sxm\n  hbm_gib: 150\n  aliases: [h200, lab]\n")
    assert get_gpu("h200", extra).hbm_gib == 150 and get_gpu("lab", extra).hbm_gib == 150
    extra = _load(tmp_path, "h200:\n  base: h200-sxm\n  hbm_gib: 150\n  aliases: [h200-141gb]\n")
    assert get_gpu("h200-141gb", extra).hbm_gib == 150  # key h200 overrides h200-sxm too


def test_two_file_gpus_may_not_share_an_alias(tmp_path: Path) -> None:
    text = "a:\n  base: h100-sxm\n  aliases: [q]\nb:\n  base: h100-sxm\n  aliases: [q]\n"
    _refused(tmp_path, text, "GPU 'b': alias 'q' already names GPU 'a' of this file")


def test_a_name_field_must_match_its_key(tmp_path: Path) -> None:
    _refused(tmp_path, "mygpu:\n  name: other\n  base: h100-sxm\n", "name: 'other' differs")
    extra = _load(tmp_path, "my-gpu:\n  name: My_GPU\n  base: h100-sxm\n")  # same name
    assert get_gpu("my-gpu", extra).name == "my-gpu"


def test_a_base_defined_later_in_the_file_is_used(tmp_path: Path) -> None:
    extra = _load(tmp_path, "x:\n  base: y\n  hbm_gib: 10\ny:\n  base: h100-sxm\n  hbm_tbps: 2\n")
    assert list(extra) == ["x", "y"]
    x = get_gpu("x", extra)
    assert x.hbm_gib == 10 and x.hbm_tbps == 2 and x.bf16_tflops == 989
    extra = _load(tmp_path, f"- name: t2\n  base: toy\n  hbm_gib: 32\n- name: toy\n{TOY}")
    assert get_gpu("t2", extra).hbm_gib == 32 and get_gpu("t2", extra).bf16_tflops == 100


def test_a_base_names_the_files_override_wherever_it_is(tmp_path: Path) -> None:
    text = "mine:\n  base: h100\nh100-sxm:\n  base: h100-sxm\n  hbm_tbps: 3.0\n"
    assert get_gpu("mine", _load(tmp_path, text)).hbm_tbps == 3.0


def test_a_cycle_of_bases_is_refused(tmp_path: Path) -> None:
    text = "x:\n  base: y\ny:\n  base: z\nz:\n  base: x\n"
    _refused(tmp_path, text, r"GPU 'x': base: goes round in a cycle \(x -> y -> z -> x\)")


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("x:\n  base: h100-sxm\n  hbm_gib: 10\n  hbm_gib: 20\n", 4, "hbm_gib"),
        ("x:\n  base: h100-sxm\nx:\n  base: h200\n", 3, "x"),
    ],
)
def test_duplicate_yaml_keys_are_refused_with_the_line(
    tmp_path: Path, text: str, line: int, key: str
) -> None:
    e = _refused(tmp_path, text, f"duplicate key '{key}'")
    assert e.line == line


def test_yaml_merge_keys_still_work(tmp_path: Path) -> None:
    text = "common: &c\n  base: h100-sxm\n  nic_gbps: 200\nx:\n  <<: *c\n  nic_gbps: 100\n"
    assert get_gpu("x", _load(tmp_path, text)).nic_gbps == 100


def test_mamf_above_the_peak_is_refused(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "x:\n  base: h100-sxm\n  mamf_bf16_tflops: 1000\n",
        "mamf_bf16_tflops 1000 exceeds bf16_tflops 989",
    )
    _refused(tmp_path, f"t:\n{TOY}  mamf_bf16_tflops: 101\n", "MAMF is the measured")
    assert get_gpu("t", _load(tmp_path, f"t:\n{TOY}  mamf_bf16_tflops: 90\n")).matmul_eta == 0.9


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('"":\n  base: h100-sxm\n', r"a GPU's key is empty \(''\)"),
        ('- name: " "\n  base: h100-sxm\n', r"the name of GPU entry #1 is empty"),
        ("- name: a\n  base: h100-sxm\n- name: A\n  base: h100\n", "GPU 'a' is defined twice"),
        ("x:\n  base: h100-sxm\n  aliases: ['']\n", "list of non-empty names"),
    ],
)
def test_empty_or_repeated_names_are_refused(tmp_path: Path, text: str, match: str) -> None:
    _refused(tmp_path, text, match)


def test_cli_shadowing_alias_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "gpus.yaml"
    f.write_text("mygpu:\n  base: h100-sxm\n  aliases: [h200]\n")
    assert main(["--gpu-file", str(f), "kv", "--gpu", "h200"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "alias 'h200' already names" in err
