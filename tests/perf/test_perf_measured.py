"""Reading measured-serving rows: layouts, quant modes, concurrency, bad rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.errors import InputError
from pdplan.perf.measured import MeasuredRow, quant_to_dtype, read_measured

HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,"
    "gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,"
    "moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
)


def _write(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "m.csv"
    p.write_text(HEADER + "".join(line + "\n" for line in lines))
    return p


def test_reads_layout_and_concurrency(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "a,x; silicon_concurrency=64; y,vllm,0.19,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,"
        "fp8,fp8,32,2,1,2,1,4,100.0,10.0",
    )
    (row,) = list(read_measured(p))
    assert isinstance(row, MeasuredRow)
    assert row.concurrency == 64  # clients of one instance: batch_size 32 x attention DP 2
    assert (row.layout.tp, row.layout.dp, row.layout.ep, row.layout.etp) == (2, 2, 4, 1)
    assert row.weight_dtype == "fp8"
    assert row.source == "x; silicon_concurrency=64; y"  # kept: it says how it was measured


def test_bad_rows_are_reported_not_raised(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "a,,vllm,,m,h100_sxm,,agg,1024,128,,,8,1,1,1,1,1,-5,10.0",
        "b,,vllm,,m,h100_sxm,,agg,abc,128,,,8,1,1,1,1,1,5,10.0",
    )
    out = list(read_measured(p))
    assert [type(o) for o in out] == [tuple, tuple]
    assert out[0][0] == 2 and "positive" in out[0][1]


def test_missing_columns_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="missing column"):
        list(read_measured(p))
    with pytest.raises(InputError, match="cannot open"):
        list(read_measured(tmp_path / "nope.csv"))


def test_quant_modes() -> None:
    assert quant_to_dtype("nvfp4") == "fp4"
    assert quant_to_dtype("fp8_block") == "fp8"
    assert quant_to_dtype("") is None
    with pytest.raises(InputError):
        quant_to_dtype("weird")
    # spellings outside AIConfigurator's enums are read by what they name
    for q, want in [
        ("fp8_dynamic", "fp8"),
        ("FP8_PC_PT", "fp8"),
        ("nvfp4_awq", "fp4"),
        ("int4_awq", "int4"),
        ("gptq", "int4"),
        ("w4a8_awq", "w4a8"),
        ("auto", None),
    ]:
        assert quant_to_dtype(q) == want, q


def test_int8_weight_only_computes_in_bf16() -> None:
    from pdplan.catalog import get_gpu, get_model
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.step import BatchShape

    m, g, lay = get_model("llama-3.1-8b"), get_gpu("h100"), Layout(tp=1)
    assert quant_to_dtype("int8_wo") == "int8_wo"
    prefill = BatchShape(8192, 8192.0 * 4096, 1, 0, 0.0)  # compute-bound: an 8k prompt
    t = {d: CostModel(m, g, lay, weight_dtype=d).step_time(prefill) for d in ("bf16", "int8_wo")}
    t["int8"] = CostModel(m, g, lay, weight_dtype="int8").step_time(prefill)
    # W8A16 dequantises to BF16 tensor cores: no INT8 speed-up on a compute-bound prompt
    assert t["int8_wo"] == pytest.approx(t["bf16"], rel=0.05) and t["int8"] < 0.8 * t["bf16"]


@pytest.mark.parametrize(
    ("system", "tp", "dp", "etp", "ep", "want"),
    [
        ("b200_sxm", 16, 1, 4, 4, (4, 1, 4, 1)),  # TP4 EP4 written as tp 16 = 4 x 4
        ("b200_sxm", 64, 1, 8, 8, (8, 1, 8, 1)),  # TP8 EP8 written as tp 64
        ("b200_sxm", 1, 64, 8, 8, (1, 8, 8, 1)),  # DP-attention 8, EP8 written as dp 64
        ("h100_sxm", 4, 4, 1, 16, (1, 4, 4, 1)),  # vLLM DP4 EP written as tp 4 x dp 4
        ("gb200", 16, 1, 4, 4, (16, 1, 4, 4)),  # inside a 72-GPU NVLink domain: kept
        ("b200_sxm", 8, 1, 1, 8, (8, 1, 8, 1)),  # an ordinary one-node layout: kept
        ("nosuchgpu", 16, 1, 4, 4, (16, 1, 4, 4)),  # GPU not in the catalog: kept as written
        ("b200_sxm", 16, 1, 16, 1, (16, 1, 1, 16)),  # dense TP16 (two nodes): kept
    ],
)
def test_product_encoded_one_node_layouts_unfold(
    tmp_path: Path, system: str, tp: int, dp: int, etp: int, ep: int, want: tuple
) -> None:
    p = _write(
        tmp_path,
        f"a,x; silicon_concurrency=256,sglang,0.5.9,m,{system},fp8,agg,1024,1024,"
        f"fp8,fp8,4,{tp},1,{dp},{etp},{ep},100.0,10.0",
    )
    (row,) = list(read_measured(p))
    assert isinstance(row, MeasuredRow)
    lay = row.layout
    assert (lay.tp, lay.dp, lay.ep, lay.etp) == want
    assert row.concurrency == 4 * dp  # clients as written: batch x the file's DP width


@pytest.mark.parametrize(
    ("mode", "dtype"),
    [
        # AIConfigurator GEMMQuantMode / MoEQuantMode spellings (sdk/common.py)
        ("bfloat16", "bf16"),
        ("fp8_static", "fp8"),
        ("sq", "int8"),
        ("w4afp8", "w4a8"),
        ("w4a8_mxfp4_mxfp8", "w4a8"),
        ("w4a16_mxfp4_cutlass", "int4"),
        ("mxfp8", "fp8"),
    ],
)
def test_more_quant_spellings(mode: str, dtype: str) -> None:
    assert quant_to_dtype(mode) == dtype


def test_w4a8_is_four_bit_on_fp8_tensor_cores() -> None:
    from pdplan.catalog import get_gpu, get_model
    from pdplan.catalog.model_spec import dtype_bytes
    from pdplan.parallel.layout import Layout
    from pdplan.perf.costmodel import CostModel

    assert dtype_bytes("w4a8") == pytest.approx(0.5 + 1 / 32)
    gpu = get_gpu("b200")
    cm = CostModel(get_model("deepseek-r1"), gpu, Layout(tp=8), moe_dtype="w4a8")
    assert cm._hw.moe_flops == pytest.approx(cm._hw.gemm_flops)  # FP8 weights elsewhere: same


def test_backend_names_are_read_as_their_engine(tmp_path: Path) -> None:
    line = "{},x,{},1.0,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,fp8,fp8,8,2,1,1,2,1,100.0,10.0"
    p = _write(
        tmp_path,
        line.format("a", "dynamo-trt"),
        line.format("b", "TensorRT-LLM"),
        line.format("c", "ATOM"),
        line.format("d", "tgi"),
    )
    rows = [r for r in read_measured(p) if isinstance(r, MeasuredRow)]
    # the engine-specific rules (KV dtype, KV sizing) see the canonical name; an engine
    # nobody answers to is kept as written, to be reported unknown when predicted
    assert [r.backend for r in rows] == ["trtllm", "trtllm", "vllm", "tgi"]


def test_precision_stands_in_for_missing_quant_modes(tmp_path: Path) -> None:
    line = "{},x,vllm,1,deepseek-ai/DeepSeek-R1,b200_sxm,{},agg,1024,128,{},{},8,8,1,1,8,1,90,9"
    p = _write(
        tmp_path,
        line.format("a", "fp4", "", ""),  # no quant modes: the precision says FP4
        line.format("b", "fp4", "fp8", "fp8"),  # quant modes win over the precision
        line.format("c", "mixed", "", ""),  # the checkpoint's own mix: the model's default
    )
    rows = [r for r in read_measured(p) if isinstance(r, MeasuredRow)]
    assert [r.weight_dtype for r in rows] == ["fp4", "fp8", None]
    spelled = _write(tmp_path, line.format("d", "fp4", "", "").replace(",agg,", ",Aggregated,"))
    assert [r.mode for r in read_measured(spelled) if isinstance(r, MeasuredRow)] == ["agg"]
