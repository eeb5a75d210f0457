"""CLI, thirty-ninth (semantic) black-box pass, part c: `pdplan accuracy` prints the median
and p90 absolute % errors that its own `--rows` file gives (overall and per system), and a
disaggregated `estimate` moves its KV in the time `pdplan kv` gives for the same layouts."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from tests.cli_json import cli_json as _json

MEASURED = Path(__file__).resolve().parents[2].parent / "shared/data/calibration"


def _ape(rows: list[dict[str, str]], key: str) -> tuple[float, float]:
    v = [
        abs(float(r[f"predicted_{key}_ms"]) / float(r[f"measured_{key}_ms"]) - 1) * 100
        for r in rows
        if r[f"predicted_{key}_ms"] and r[f"measured_{key}_ms"]
    ]
    return float(np.median(v)), float(np.percentile(v, 90))


@pytest.mark.skipif(not (MEASURED / "measured_serving.csv").exists(), reason="needs ../shared")
def test_accuracy_table_recomputes_from_rows(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    d = _json("accuracy", "--measured", MEASURED / "measured_serving.csv", "--mode", "agg",
              "--rows", out, "--json")  # fmt: skip
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == d["predicted"]
    groups = {"overall": rows} | {
        s: [r for r in rows if r["system"] == s] for s in d["agg"]["by_system"]
    }
    for name, rs in groups.items():
        got = d["agg"]["overall"] if name == "overall" else d["agg"]["by_system"][name]
        for key in ("ttft", "tpot"):
            med, p90 = _ape(rs, key)
            assert got[f"{key}_ape"]["n"] == len(rs)
            assert got[f"{key}_ape"]["median"] == pytest.approx(med, abs=0.01), (name, key)
            assert got[f"{key}_ape"]["p90"] == pytest.approx(p90, abs=0.01), (name, key)


def test_disagg_kv_time_is_pdplan_kv() -> None:
    lay = ("--prefill-layout", "tp4", "--decode-layout", "tp8")
    e = _json("estimate", "--mode", "disagg", "--model", "llama-3.1-70b", "--gpu", "h100",
              *lay, "-c", 16, "--isl", 4000, "--osl", 500, "--json")  # fmt: skip
    k = _json("kv", "--model", "llama-3.1-70b", "--gpu", "h100", "--tokens", 4000, *lay, "--json")
    assert e["kv_path"] == "nic" and e["kv_transfer_ms"] == pytest.approx(k["time_ms"])
    # 2 * 80 * 8 * 128 * 2 B x 4000 tokens over the 4 sending NICs (8 KV heads on 4 ranks)
    assert k["time_s"] == pytest.approx(327_680 * 4000 / 4 / (400e9 / 8 * 0.85) + 20e-6)
