"""Every file a command writes appears complete or not at all: `workload synth -o`, `workload
convert SRC DST`, `workload inspect --plot` and `accuracy --rows` write a temporary file beside
the target and rename it once written (cli/_paths.replaced_on_success). A Ctrl-C or a failed
write mid-file leaves neither a truncated target nor the temporary `.NAME.PID.part`; a normal
write gives the same bytes as the writer called directly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import pdplan.cli.accuracy as accuracy_cli
from pdplan.cli import main
from pdplan.workload import read_workload, synthesize, write_workload

SYNTH = ["--requests", "300", "--input", "lognormal:800:1", "--seed", "3"]
MEASURED = (
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,"
    "osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,"
    "moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"
    "ok,x,vllm,1,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1024,128,,,8,1,1,,1,1,100,8\n"
)
TRACE_EXTS = ["jsonl", "csv", "parquet", "jsonl.gz", "csv.gz"]


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    """main(args) -> (exit status, stderr)."""
    rc = main(args)
    return rc, capsys.readouterr().err


def _synth_workload() -> Any:
    """The trace `workload synth SYNTH` makes (the CLI's defaults for the rest)."""
    return synthesize(
        n=300, duration_s=None, rate=1.0, arrival="poisson", cv=1.0,
        input="lognormal:800:1", output="fixed:256", rate_curve=None, seed=3,
    )  # fmt: skip


def _bytes(path: Path) -> bytes:
    """The file's bytes; a gzip member's 4-byte mtime (bytes 4..8, the clock) left out."""
    b = path.read_bytes()
    return b[:4] + b[8:] if path.name.endswith(".gz") else b


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    """An output folder (nothing else in it) and, outside it, a trace and a measured CSV."""
    out = tmp_path / "out"
    out.mkdir()
    src = tmp_path / "src.jsonl"
    write_workload(_synth_workload(), src)
    measured = tmp_path / "m.csv"
    measured.write_text(MEASURED)
    return {"out": out, "src": src, "measured": measured}


def _args(cmd: str, work: dict[str, Path], target: Path) -> list[str]:
    """The command line that writes `target` through the output option of `cmd`."""
    if cmd == "synth":
        return ["workload", "synth", *SYNTH, "-o", str(target)]
    if cmd == "convert":
        return ["workload", "convert", str(work["src"]), str(target)]
    if cmd == "plot":
        return ["workload", "inspect", str(work["src"]), "--plot", str(target)]
    return ["accuracy", "--measured", str(work["measured"]), "--rows", str(target)]


def _half_then(exc: BaseException) -> Callable[..., None]:
    """A writer stand-in: half a file into its first path / file argument, then `exc`."""

    def fake(*args: Any, **kwargs: Any) -> None:
        for a in (*args, *kwargs.values()):
            if hasattr(a, "write") and not hasattr(a, "writerow"):
                a.write("partial" if isinstance(a, io.TextIOBase) else b"partial")
                raise exc
            if isinstance(a, str | os.PathLike):
                Path(a).write_bytes(b"partial")
                raise exc
        raise exc  # csv.DictWriter.writerows(self, rows): its header is written already

    return fake


def _break_writer(monkeypatch: pytest.MonkeyPatch, cmd: str, ext: str, exc: BaseException) -> None:
    """Make the writer `cmd` uses for a `.ext` file write half its output, then raise."""
    import csv

    import matplotlib.figure
    import pyarrow.csv
    import pyarrow.parquet

    fake = _half_then(exc)
    if cmd == "plot":
        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", fake)
    elif cmd == "rows":
        monkeypatch.setattr(csv.DictWriter, "writerows", fake)
    elif ext.startswith("jsonl"):
        monkeypatch.setattr("pdplan.workload.writers._write_jsonl", fake)
    elif ext.startswith("csv"):
        monkeypatch.setattr(pyarrow.csv, "write_csv", fake)
    else:
        monkeypatch.setattr(pyarrow.parquet, "write_table", fake)


CASES = [
    *[("synth", e) for e in TRACE_EXTS],
    *[("convert", e) for e in TRACE_EXTS],
    ("plot", "png"),
    ("plot", "svg"),
    ("rows", "csv"),
]


@pytest.mark.parametrize(("cmd", "ext"), CASES)
def test_ctrl_c_mid_write_leaves_no_file_and_keeps_the_old_one(
    cmd: str, ext: str, work: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    target = work["out"] / f"t.{ext}"
    _break_writer(monkeypatch, cmd, ext, KeyboardInterrupt())
    rc, err = _run(capsys, _args(cmd, work, target))
    assert rc == 130 and "interrupted (Ctrl-C)" in err
    assert os.listdir(work["out"]) == []  # neither t.EXT nor .t.EXT.PID.part
    target.write_bytes(b"earlier run\n")
    rc, _ = _run(capsys, _args(cmd, work, target))
    assert rc == 130 and target.read_bytes() == b"earlier run\n"
    assert os.listdir(work["out"]) == [target.name]


@pytest.mark.parametrize(("cmd", "ext"), CASES)
def test_a_failed_write_is_one_line_naming_the_target_and_leaves_no_file(
    cmd: str, ext: str, work: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    target = work["out"] / f"t.{ext}"
    _break_writer(monkeypatch, cmd, ext, OSError(28, "No space left on device"))
    rc, err = _run(capsys, _args(cmd, work, target))
    assert rc == 2 and os.listdir(work["out"]) == []
    assert err.count("\n") == 1 and str(target) in err and "No space left" in err
    assert ".part" not in err and "Traceback" not in err


@pytest.mark.parametrize("cmd", ["synth", "convert", "plot", "rows"])
def test_a_failed_rename_names_the_target_and_leaves_no_part(
    cmd: str, work: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    target = work["out"] / ("t.png" if cmd == "plot" else "t.csv")

    def refuse(a: Any, b: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("pdplan.cli._paths.os.replace", refuse)
    rc, err = _run(capsys, _args(cmd, work, target))
    assert rc == 2 and os.listdir(work["out"]) == []
    assert err.count("\n") == 1 and str(target) in err and "Permission denied" in err


@pytest.mark.parametrize("cmd", ["synth", "convert", "plot", "rows"])
def test_a_missing_folder_is_refused_before_any_work(
    cmd: str, work: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    target = work["out"] / "no" / ("t.png" if cmd == "plot" else "t.csv")
    rc, err = _run(capsys, _args(cmd, work, target))
    assert rc == 2 and err.count("\n") == 1 and str(target) in err and "no folder" in err
    assert os.listdir(work["out"]) == []


@pytest.mark.parametrize("ext", TRACE_EXTS)
def test_synth_and_convert_write_what_write_workload_writes(
    ext: str, work: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (work["out"].parent / "direct").mkdir()
    for cmd in ("synth", "convert"):
        name = f"{cmd}.{ext}"  # one name: a gzip header carries it
        direct = work["out"].parent / "direct" / name
        write_workload(_synth_workload(), direct)
        rc, _ = _run(capsys, _args(cmd, work, work["out"] / name))
        assert rc == 0 and _bytes(work["out"] / name) == _bytes(direct), cmd
    assert sorted(os.listdir(work["out"])) == [f"convert.{ext}", f"synth.{ext}"]


def test_the_plot_is_what_plot_workload_writes(
    work: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from pdplan.workload.plot import plot_workload

    direct = work["out"].parent / "direct.png"
    plot_workload(read_workload(str(work["src"])), direct)
    target = work["out"] / "t.png"
    rc, _ = _run(capsys, _args("plot", work, target))
    assert rc == 0 and target.read_bytes() == direct.read_bytes()
    assert os.listdir(work["out"]) == ["t.png"]


@contextmanager
def _in_place(path: str) -> Iterator[str]:
    """replaced_on_success's stand-in that writes `path` itself, as --rows did before."""
    yield path


def test_rows_are_what_the_direct_writer_writes(
    work: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = work["out"] / "rows.csv"
    assert _run(capsys, _args("rows", work, target))[0] == 0
    with monkeypatch.context() as m:
        m.setattr(accuracy_cli, "replaced_on_success", _in_place)
        direct = work["out"].parent / "direct.csv"
        assert _run(capsys, _args("rows", work, direct))[0] == 0
    assert target.read_bytes() == direct.read_bytes() and b"ok,vllm" in direct.read_bytes()
    assert os.listdir(work["out"]) == ["rows.csv"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/dev/stdout -> /proc/self/fd")
def test_rows_to_dev_stdout_through_a_pipe_reach_the_pipe(work: dict[str, Path]) -> None:
    # a pipe behind /dev/stdout resolves to no file: a temporary name beside it cannot exist
    import pdplan

    env = {**os.environ, "PYTHONPATH": str(Path(pdplan.__file__).parents[1])}
    args = [sys.executable, "-m", "pdplan.cli", *_args("rows", work, Path("/dev/stdout"))]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("id,backend,") and "\nok,vllm," in r.stdout
