"""A small synthetic measured-serving CSV whose "measured" TTFT / TPOT are the cost model's
own predictions with a known vLLM efficiency changed (the truth a calibration should find)."""

from __future__ import annotations

from pathlib import Path

from pdplan.catalog.gpus import get_gpu
from pdplan.perf.efficiency import get_efficiency
from pdplan.perf.measured import MeasuredRow, read_measured
from pdplan.plan.accuracy import predict_row

HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,"
    "osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
    "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
)
MODELS = ("meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-32B")
# (ISL, OSL, clients): decode-heavy setups, where the weight / KV streaming rate (mem_eta) sets
# TPOT, with a long prompt for TTFT
SETUPS = ((1024, 256, 1), (1024, 256, 8), (4096, 512, 16), (2048, 1024, 64))


def _line(i: int, model: str, isl: int, osl: int, c: int, ttft: float, tpot: float) -> str:
    return f"r{i},synthetic,vllm,1,{model},h100_sxm,,agg,{isl},{osl},,,{c},2,1,,2,1,{ttft},{tpot}\n"


def write_synthetic(path: Path, truth: dict[str, float], models: tuple[str, ...] = MODELS) -> Path:
    """Rows of `models` x SETUPS on H100 TP2 whose measured values are the estimate's with
    the vLLM factors `truth` in place; returns `path`."""
    rows = [(m, *s) for m in models for s in SETUPS]
    path.write_text(HEADER + "".join(_line(i, *r, 100.0, 10.0) for i, r in enumerate(rows)))
    gpu = get_gpu("h100_sxm")
    eff = get_efficiency("vllm", gpu.name, gpu.hbm_gib).with_(**truth)
    lines = []
    for i, (r, m) in enumerate(zip(read_measured(path), rows, strict=True)):
        assert isinstance(r, MeasuredRow)
        p = predict_row(r, eff)
        lines.append(_line(i, *m, round(p.ttft_ms, 6), round(p.tpot_ms, 6)))
    path.write_text(HEADER + "".join(lines))
    return path
