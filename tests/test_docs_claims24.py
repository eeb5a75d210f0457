"""What README.md and docs/*.md promise holds on this checkout: every flag they name exists
(on the command their examples run it with), the option values and defaults they quote are
accepted and in effect, the columns and keys docs/simulate-outputs.md lists are written, the
counts they quote match the data, the files they point to exist, and the README's test
command is the one .ci/run runs. (tests/cli/test_cli_simulate_outputs.py checks the other
direction: every column and key the simulator writes is documented.)"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import typer.main

from pdplan.cli import app, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
OUTPUTS = ROOT / "docs" / "simulate-outputs.md"
MEASURED = ROOT.parent / "shared" / "data" / "calibration" / "measured_serving.csv"
EXTERNAL = ROOT / "benchmarks" / "external_serving.csv"

# Flags the docs name that belong to the engines the tool models (their launch flags), not to
# pdplan; every other flag must be a pdplan option or a benchmarks/ script's argparse option.
ENGINE_FLAGS = {
    "--gpu-memory-utilization",  # vLLM
    "--max-num-batched-tokens",  # vLLM
    "--kv-cache-dtype",  # vLLM
    "--random-range-ratio",  # vLLM benchmark_serving.py
    "--mem-fraction-static",  # SGLang
    "--scheduler-recv-interval",  # SGLang
    "--max_num_tokens",  # TensorRT-LLM
}


def _options() -> dict[str, set[str]]:
    """'simulate' / 'workload inspect' / '' (the root) -> the option strings it takes."""
    out: dict[str, set[str]] = {}

    def walk(cmd, path: str) -> None:  # type: ignore[no-untyped-def]
        out[path] = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return out


OPTIONS = _options()


def _doc_texts() -> list[tuple[str, str]]:
    return [(p.name, p.read_text()) for p in (README, *DOCS)]


def _pdplan_commands(text: str) -> list[str]:
    """Every `pdplan ...` command line the text shows: lines of its ```bash blocks (with
    backslash continuations joined, comments dropped) and inline code spans."""
    cmds = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("pdplan "):
                cmds.append(line)
            elif "&& pdplan " in line:
                cmds.append("pdplan " + line.split("&& pdplan ", 1)[1])
    for span in re.findall(r"`(pdplan [^`]*)`", text):
        cmds.append(" ".join(span.split()))
    return cmds


def _split(cmd: str) -> tuple[str, list[str], list[str]]:
    """'pdplan --gpu-file F estimate --gpu G' -> ('estimate', ['--gpu-file'], ['--gpu'])."""
    words = cmd.split()[1:]
    root: list[str] = []
    while words and words[0].startswith("--"):
        root.append(words.pop(0))
        if words and not words[0].startswith("-") and words[0] not in OPTIONS:
            words.pop(0)  # the root option's value
    path = ""
    while words and f"{path} {words[0]}".strip() in OPTIONS:
        path = f"{path} {words.pop(0)}".strip()
    flags = [w.split("=", 1)[0] for w in words if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", w)]
    return path, root, flags


def test_every_example_command_runs_a_real_command_with_its_own_flags() -> None:
    seen = 0
    for name, text in _doc_texts():
        for cmd in _pdplan_commands(text):
            path, root, flags = _split(cmd)
            assert set(root) <= OPTIONS[""], f"{name}: {cmd!r}: {root} are not root options"
            if path == "" and flags == []:
                continue  # `pdplan --help`, `pdplan --gpu-file FILE ...`
            assert path, f"{name}: {cmd!r} names no pdplan command"
            unknown = [f for f in flags if f not in OPTIONS[path]]
            assert not unknown, f"{name}: {cmd!r}: `pdplan {path}` has no {unknown}"
            seen += 1
    assert seen >= 15  # the README's examples block alone has 14 commands


def _script_flags() -> set[str]:
    flags: set[str] = set()
    for py in (ROOT / "benchmarks").glob("*.py"):
        flags |= set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", py.read_text()))
    return flags


def test_every_flag_the_docs_name_exists_somewhere() -> None:
    known = set().union(*OPTIONS.values()) | _script_flags() | ENGINE_FLAGS
    for name, text in _doc_texts():
        for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][\w-]*", text))):
            assert flag in known, f"{name} names {flag}, which no pdplan command takes"


def test_the_readme_test_command_is_exactly_what_ci_runs() -> None:
    text = README.read_text()
    cmd = next(
        line.strip()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S)
        for line in block.splitlines()
        if "pytest" in line
    )
    assert "exactly what `.ci/run` runs" in text
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert cmd in ci, f"README's {cmd!r} is not a line of .ci/run: {ci}"


def test_links_and_source_files_the_docs_name_exist() -> None:
    for name, text in _doc_texts():
        base = ROOT if name == "README.md" else ROOT / "docs"
        for link in re.findall(r"\]\(([^)#]+)\)", text):
            if not link.startswith(("http:", "https:")):
                assert (base / link).exists(), f"{name} links to missing {link}"
        for ref in re.findall(r"`((?:perf|plan|sim|catalog|workload|parallel)/[\w*./]+)`", text):
            assert list((ROOT / "src" / "pdplan").glob(ref)), f"{name}: no src/pdplan/{ref}"
        for ref in re.findall(r"(benchmarks/[\w.]+\.(?:py|csv|md))", text):
            assert (ROOT / ref).exists(), f"{name}: no {ref}"


def test_quoted_counts_match_the_catalog_and_data() -> None:
    from pdplan.catalog.models import list_models

    text = " ".join(README.read_text().split())
    presets = int(re.search(r"Models: (\d+) built-in presets", text).group(1))
    assert presets == len(list_models())
    ext = int(re.search(r"external_serving\.csv` holds (\d+) published", text).group(1))
    with EXTERNAL.open(newline="") as fh:
        assert ext == sum(1 for _ in csv.DictReader(fh))
    if not MEASURED.is_file():
        pytest.skip("shared measured_serving.csv not present")
    with MEASURED.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    total = re.search(r"predicts all ([\d,]+) measured rows", text).group(1)
    agg = re.search(r"Of the ([\d,]+) aggregated rows", text).group(1)
    assert int(total.replace(",", "")) == len(rows)
    assert int(agg.replace(",", "")) == sum(r["mode"] == "agg" for r in rows)


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    rc = main(["simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *args])
    return rc, capsys.readouterr().out


# `--routing` and `--pairing` take free-form names; the `|`-joined values the README quotes
VALUE_FORM = re.compile(r"`(--[a-z-]+) ([a-z]+(?:\\?\|[A-Za-z]+)+)`")


def _documented_values() -> list[tuple[str, str]]:
    text = README.read_text()
    pairs = []
    for flag, values in VALUE_FORM.findall(text):
        for v in values.replace("\\", "").split("|"):
            pairs.append((flag, "64" if v == "BLOCKS" else v))  # BLOCKS: a number of blocks
    return pairs


def test_the_readme_quotes_simulate_option_values() -> None:
    flags = {f for f, _ in _documented_values()}
    assert {"--placement", "--transfer", "--preemption", "--prefix-cache"} <= flags


@pytest.mark.parametrize(("flag", "value"), _documented_values())
def test_every_documented_option_value_is_accepted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str
) -> None:
    assert flag in OPTIONS["simulate"]
    more = ["--pairing", "local"] if (flag, value) == ("--placement", "mixed") else []
    workload = "poisson:rate=2,n=20,isl=200,osl=20"
    if flag == "--prefix-cache":  # "for traces with block hashes, e.g. Mooncake": a tiny one
        trace = tmp_path / "mooncake.jsonl"
        trace.write_text("".join(
            json.dumps({"timestamp": 500 * i, "input_length": 1024, "output_length": 20,
                        "hash_ids": [0, 1, i + 2, i + 3]}) + "\n"
            for i in range(20)
        ))  # fmt: skip
        workload = str(trace)
    rc, out = _simulate(capsys, "--deployment", "1P:tp1+1D:tp1", "--workload", workload,
                        flag, value, *more, "--json")  # fmt: skip
    assert rc == 0, (flag, value)
    s = json.loads(out)
    assert s["finished"] == 20
    if flag == "--prefix-cache" and value != "off":
        assert s["prefix_hit_rate"] > 0  # the shared first blocks are served from the cache


def _table_keys(section: str) -> list[tuple[list[str], str]]:
    """(the backticked names of a row's first cell, the row's meaning) for each row of the
    table under `## <section>` in docs/simulate-outputs.md."""
    text = OUTPUTS.read_text()
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in body.splitlines():
        cells = line.split(" | ")
        if line.startswith("| `") and len(cells) >= 2:
            rows.append((re.findall(r"`([\w.]+)(?:\[\])?`", cells[0]), cells[1]))
    assert rows, section
    return rows


def test_the_outputs_doc_lists_only_what_simulate_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    req, tl = tmp_path / "req.csv", tmp_path / "tl.csv"
    wl = "poisson:rate=2,n=30,isl=300,osl=30"
    files = ["--requests-out", str(req), "--timeline-out", str(tl)]
    rc, out = _simulate(
        capsys, "--deployment", "1P:tp1+1D:tp1", "--workload", wl, "--spec-decode", "eagle:2",
        *files, "--json",
    )  # fmt: skip
    assert rc == 0
    s = json.loads(out)
    req_cols = req.read_text().splitlines()[0].split(",")
    tl_cols = tl.read_text().splitlines()[0].split(",")
    for names, _ in _table_keys("Per-request table"):
        assert set(names) <= set(req_cols), names
    for names, _ in _table_keys("Timeline table"):
        assert set(names) <= set(tl_cols), names
    for names, meaning in _table_keys("Summary"):
        if meaning.startswith("only with") and names[0] not in s:
            assert names[0] == "ctx_gates", names  # needs --engine trtllm --adp-balance
            continue
        assert names[0] in s, names
        if names[0] == "instances":  # its per-instance keys (and the timeline's `queued`)
            mentioned = set(re.findall(r"`(\w+)`", meaning))
            assert mentioned <= set(s["instances"][0]) | set(tl_cols), mentioned
    for block in ("ttft_s", "tpot_s", "itl_s", "e2e_s", "queue_s", "kv_transfer_s"):
        assert set(s[block]) == {"mean", "p50", "p90", "p99", "p99.9"}, block


def test_the_defaults_the_docs_quote_are_in_effect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = " ".join(README.read_text().split())
    m = re.search(r"`--slo-ttft` ([\d.]+) s, `--slo-tpot` ([\d.]+) s by default", text)
    tl = tmp_path / "tl.csv"
    wl = "poisson:rate=1,n=40,isl=200,osl=20"
    rc, out = _simulate(
        capsys, "--deployment", "tp1x1", "--workload", wl, "--timeline-out", str(tl), "--json"
    )
    assert rc == 0
    slo = json.loads(out)["slo"]
    assert (slo["ttft_s"], slo["tpot_s"]) == (float(m.group(1)), float(m.group(2)))
    # the timeline's default period: 1 s, the run (~40 s of arrivals at 1 req/s) being >= 20 s
    assert "every `--sample-interval` s, default 1" in text
    with tl.open(newline="") as fh:
        times = sorted({float(r["t_s"]) for r in csv.DictReader(fh)})
    assert times[1] - times[0] == pytest.approx(1.0)


def test_pdplan_ratio_with_no_flags_plans_what_the_quick_start_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = " ".join(README.read_text().split())
    said = "Llama-3.1-70B on H100 (prefill TP4, decode TP4, ISL 4000 / OSL 500, TPOT target 50 ms)"
    assert f"plans {said}" in text
    assert main(["ratio", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert (r["model"], r["gpu"], r["prefill_layout"], r["decode_layout"]) == (
        "llama-3.1-70b", "h100-sxm", "tp4", "tp4"
    )  # fmt: skip
    assert (r["isl"], r["osl"], r["tpot_s"]) == (4000, 500, 0.05)
    assert r["qps_sweep"]["crossover_qps"] > 0  # the rate above which the ratio holds
