"""`pdplan accuracy` says when predicted rows repeat an earlier row exactly (a measurement
copied into the file twice counts twice in every median), in its JSON and its text."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from tests.cli_json import cli_json

from pdplan.cli import main

MEASURED = Path(__file__).resolve().parents[3] / "shared/data/calibration/measured_serving.csv"


def _file(tmp_path: Path, copies: int) -> Path:
    """The first five aggregated rows of the measured file, then `copies` of its second row
    under new ids (a distinct id, the same setup and measurements)."""
    if not MEASURED.exists():
        pytest.skip("../shared/data is not here")
    with MEASURED.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    head, mode = rows[0], rows[0].index("mode")
    agg = [r for r in rows[1:] if r[mode] == "agg"][:5]
    path = tmp_path / "m.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerows([head, *agg])
        w.writerows([[f"{agg[1][0]}_copy{k}", *agg[1][1:]] for k in range(copies)])
    return path


def test_copied_rows_are_counted_and_named(tmp_path: Path) -> None:
    path = _file(tmp_path, 2)
    rep = cli_json("accuracy", "--measured", path, "--json")
    first = _file(tmp_path, 0).read_text().splitlines()[2].split(",")[0]
    assert rep["predicted"] == 7
    assert rep["duplicates"] == {"rows": 2, "example": f"{first}_copy0 = {first}"}


def test_a_file_without_copies_says_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, 0)
    assert cli_json("accuracy", "--measured", path, "--json")["duplicates"]["rows"] == 0
    assert main(["accuracy", "--measured", str(path)]) == 0
    assert "repeat" not in capsys.readouterr().out.split("predicted 5 rows")[1]


def test_the_text_report_warns_about_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["accuracy", "--measured", str(_file(tmp_path, 1))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 predicted row repeats an earlier row exactly" in out
    assert "counts again in the medians" in out
