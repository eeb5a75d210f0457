"""perf.efficiency_file / set_efficiency_overrides: a user's overlay of efficiency factors goes
over the packaged table (engine fields, then per-GPU blocks), and bad files are refused with
the file and key named."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pdplan.errors import ConfigError, InputError
from pdplan.perf.efficiency import get_efficiency, set_efficiency_overrides
from pdplan.perf.efficiency_file import load_efficiency_file


@pytest.fixture(autouse=True)
def _no_overlay() -> Iterator[None]:
    set_efficiency_overrides(None)
    yield
    set_efficiency_overrides(None)


def _file(tmp_path: Path, text: str) -> str:
    f = tmp_path / "eff.yaml"
    f.write_text(text)
    return str(f)


def test_an_overlay_replaces_only_its_fields_for_its_engine(tmp_path: Path) -> None:
    packaged = get_efficiency("vllm", "h100-sxm", 80.0)
    table = load_efficiency_file(_file(tmp_path, "engines:\n  vLLM:\n    mem_eta: 0.61\n"))
    assert table == {"vllm": {"mem_eta": 0.61}}
    set_efficiency_overrides(table)
    eff = get_efficiency("vllm", "h100-sxm", 80.0)
    assert eff.mem_eta == 0.61 and eff.gemm_eta == packaged.gemm_eta
    assert get_efficiency("atom").mem_eta == 0.61  # an alias of vllm
    assert get_efficiency("sglang").mem_eta != 0.61
    set_efficiency_overrides(None)
    assert get_efficiency("vllm", "h100-sxm", 80.0) == packaged


def test_a_gpu_block_applies_on_that_gpu_only_and_over_engine_fields(tmp_path: Path) -> None:
    text = (
        "engines:\n  trtllm:\n    mem_eta: 0.7\n    gpus:\n      h100_sxm: {mem_eta: 0.65}\n"
        "  vllm:\n    max_seqs: 128\n"
    )
    set_efficiency_overrides(load_efficiency_file(_file(tmp_path, text)))
    assert get_efficiency("trtllm", "h100-sxm", 80.0).mem_eta == 0.65  # h100_sxm -> h100-sxm
    assert get_efficiency("trtllm", "b200-sxm", 180.0).mem_eta == 0.7
    # the overlay's engine field wins over the packaged per-GPU block (A100: max_seqs 256)
    assert get_efficiency("vllm", "a100-sxm", 80.0).max_seqs == 128


def test_a_lower_memory_efficiency_slows_decode(tmp_path: Path) -> None:
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel

    model, gpu = get_model("llama-3.1-8b"), get_gpu("h100-sxm")

    def decode_step() -> float:
        cm = CostModel(model, gpu, Layout(tp=1), "vllm", "bf16", "bf16")
        return sum(cm.decode_affine(8, 2048))

    before = decode_step()
    half = get_efficiency("vllm").mem_eta / 2
    set_efficiency_overrides(
        load_efficiency_file(_file(tmp_path, f"engines: {{vllm: {{mem_eta: {half}}}}}"))
    )
    assert decode_step() > 1.5 * before  # weight streaming dominates a small decode batch


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "engines: {vllm: {mem_eat: 0.7}}",
            r"engines\.vllm\.mem_eat: unknown efficiency field; known: gemm_eta",
        ),
        (
            "engines: {vllm: {mem_eta: .nan}}",
            r"engines\.vllm\.mem_eta: must be a finite number > 0",
        ),
        ("engines: {vllm: {step_s: -1e-3}}", r"engines\.vllm\.step_s: must be a finite number > 0"),
        ("engines: {vllm: {mem_eta: 0}}", r"mem_eta: must be a finite number > 0"),
        ("engines: {vllm: {mem_eta: 1.5}}", r"mem_eta: an eta is a fraction of a peak"),
        ("engines: {vllm: {mem_eta: fast}}", r"mem_eta: must be a number"),
        ("engines: {vllm: {chunked: 1}}", r"chunked: must be true or false"),
        ("engines: {vllm: {max_seqs: 1.5}}", r"max_seqs: must be a whole number"),
        ("engines: {nosuch: {mem_eta: 0.7}}", r"engines\.nosuch: unknown engine"),
        ("engines: {vllm: {gpus: {nosuch-gpu: {mem_eta: 0.7}}}}", r"gpus\.nosuch-gpu: "),
        ("engines: {vllm: {gpus: {h100: {gpus: {}}}}}", r"gpus\.h100\.gpus: unknown"),
        ("default: {mem_eta: 0.7}", r"one top-level key `engines:`"),
        ("engines: []", r"engines: expected a mapping"),
        ("engines: {vllm: 0.7}", r"expected a mapping of fields"),
    ],
)
def test_bad_overlays_name_the_file_and_key(tmp_path: Path, text: str, match: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(ConfigError, match=match) as exc:
        load_efficiency_file(path)
    assert path in str(exc.value)


def test_zero_is_allowed_where_the_model_may_leave_a_term_out(tmp_path: Path) -> None:
    text = "engines: {vllm: {mla_kernels: 0, seq_s: 0, step_s: 2e-4}}"  # 2e-4: a YAML string
    table = load_efficiency_file(_file(tmp_path, text))
    assert table == {"vllm": {"mla_kernels": 0.0, "seq_s": 0.0, "step_s": 2e-4}}


def test_unreadable_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read efficiency file"):
        load_efficiency_file(str(tmp_path / "missing.yaml"))
    with pytest.raises(InputError, match="not valid YAML"):
        load_efficiency_file(_file(tmp_path, "engines: {vllm: [\n"))
