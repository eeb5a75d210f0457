"""CLI: accuracy on a file where nothing can be predicted fails, after listing the reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdplan.cli import main

HEADER = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,"
    "osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
    "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
)
UNKNOWN = "vllm,1,Foo/Bar-7B,h100_sxm,,agg,1024,128,,,8,1,1,,1,1,100,8\n"


def test_every_row_skipped_exits_non_zero_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "m.csv"
    f.write_text(HEADER + "a,x," + UNKNOWN + "b,x," + UNKNOWN)
    rc = main(["accuracy", "--measured", str(f)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert "unknown model 'Foo/Bar-7B'" in out + err
    assert "none of the 2 rows could be predicted" in err


def test_empty_file_is_named_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "m.csv"
    f.write_text("")
    assert main(["accuracy", "--measured", str(f)]) == 2
    assert "empty file" in capsys.readouterr().err
