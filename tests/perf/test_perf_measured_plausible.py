"""Measured rows that cannot be what was measured are named, not simulated; other delimiters
and spaced headers are told apart from missing columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.errors import InputError
from pdplan.perf.measured import MAX_CLIENTS, MeasuredRow, read_measured

HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,"
    "gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,"
    "moe_ep_size,silicon_ttft_ms,silicon_tpot_ms"
)
ROW = "a,,vllm,0.19,Qwen/Qwen3-32B,h100_sxm,{prec},agg,1024,128,{gemm},,{batch},2,1,{dp},1,1,100,10"


def _read(tmp_path: Path, *rows: str, header: str = HEADER) -> list[MeasuredRow | tuple]:
    p = tmp_path / "m.csv"
    p.write_text(header + "\n" + "".join(r + "\n" for r in rows))
    return list(read_measured(p))


def _row(prec: str = "fp8", gemm: str = "", batch: str = "8", dp: str = "1") -> str:
    return ROW.format(prec=prec, gemm=gemm, batch=batch, dp=dp)


def test_a_client_count_past_any_benchmark_is_named(tmp_path: Path) -> None:
    # 1e9 clients was simulated and reported a 109,881 % TTFT error
    out = _read(tmp_path, _row(batch="1000000000"), _row(batch="600000", dp="2"), _row())
    assert out[0] == (2, f"1,000,000,000 concurrent clients is past {MAX_CLIENTS:,}: a batch "
                      "size or client count this large is a unit or parsing error")  # fmt: skip
    assert isinstance(out[1], tuple) and "1,200,000 concurrent clients" in out[1][1]
    assert isinstance(out[2], MeasuredRow) and out[2].concurrency == 8


def test_an_unknown_precision_is_named_not_read_as_the_default(tmp_path: Path) -> None:
    # 'fp6' was read as the model's default dtype: another setup than the one measured
    bad, named, blank = _read(tmp_path, _row(prec="fp6"), _row(prec="fp6", gemm="fp8"),
                              _row(prec=""))  # fmt: skip
    assert isinstance(bad, tuple) and bad[0] == 2
    assert bad[1].startswith("precision: unknown quant mode 'fp6'")
    assert isinstance(named, MeasuredRow) and named.weight_dtype == "fp8"  # gemm_quant_mode wins
    assert isinstance(blank, MeasuredRow) and blank.weight_dtype is None  # the model's default


@pytest.mark.parametrize(("sep", "said"), [(";", "semicolons"), ("\t", "tabs")])
def test_another_delimiter_is_named(tmp_path: Path, sep: str, said: str) -> None:
    with pytest.raises(InputError, match=f"the header is separated by {said}; this reader"):
        _read(tmp_path, _row().replace(",", sep), header=HEADER.replace(",", sep))


def test_a_header_with_spaces_after_its_commas_reads(tmp_path: Path) -> None:
    (row,) = _read(tmp_path, _row(), header=HEADER.replace(",", ", "))
    assert isinstance(row, MeasuredRow) and (row.isl, row.osl, row.ttft_ms) == (1024, 128, 100)


def test_a_header_missing_columns_gets_no_delimiter_hint(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing column\(s\): backend") as exc:
        _read(tmp_path, "1,2", header="id,isl")
    assert "separated" not in str(exc.value)
