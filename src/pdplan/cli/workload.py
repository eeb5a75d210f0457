"""`pdplan workload inspect | synth | convert`: real traffic in, statistics and traces out."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console

from pdplan.cli._common import emit, kv_table, refuse_empty, warn
from pdplan.cli._paths import check_output, replaced_on_success
from pdplan.cli._synth_flags import flag_named
from pdplan.cli._workload_render import render_metrics, render_stats, warn_stats
from pdplan.errors import ConfigError, InputError
from pdplan.workload import (
    metrics_summary,
    parse_duration,
    read_metrics,
    read_workload,
    synthesize,
    workload_stats,
    write_workload,
)
from pdplan.workload.formats import looks_like_prometheus
from pdplan.workload.writers import output_format

__all__ = ["register"]

_FORMAT_HELP = "mooncake, azure, burstgpt, vidur, csv, jsonl, parquet, prometheus (default: detect)"
_OUT_HELP = "output file (.jsonl, .csv, .parquet; .jsonl.gz / .csv.gz)"
_RATE_HELP = (
    "mean arrival rate, requests/s (a --curve shapes it around this mean: diurnal over "
    "whole periods, points scaled to mean 1 over the trace)"
)
_CURVE_HELP = "diurnal:24h[:AMP] or points:0=1,1h=3 (relative rates: 1h=3 is 3x the rate at 0)"
_LENGTH_HELP = (
    "N, uniform:LO:HI (inclusive), lognormal:MEAN:SIGMA[:MAX] (MEAN: the mean length, not the "
    "median; SIGMA: the std dev of ln(length); MAX clips), empirical:FILE"
)
_MAP_HELP = (
    "generic columns: input=COL,output=COL[,time=COL,time_unit=ms,session=COL,hashes=COL] "
    "(time_unit: s, the default, or ms / us / ns)"
)


def inspect(
    file: str = typer.Argument(..., help="trace file (CSV/JSONL/Parquet, .gz ok) or metrics URL"),
    fmt: str | None = typer.Option(None, "--format", "-f", help=_FORMAT_HELP),
    mapping: str | None = typer.Option(None, "--map", help=_MAP_HELP),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="skip malformed rows, count them"),
    window: str | None = typer.Option(None, "--window", help="per-window stats: 15m, 1h, 90s"),
    lru_blocks: int | None = typer.Option(
        None, "--lru-blocks", min=1, help="prefix cache capacity"
    ),
    as_json: bool = typer.Option(False, "--json", help="print JSON (stable keys)"),
    plot: str | None = typer.Option(
        None, "--plot", help="write histograms + rate as an image (.png, .svg, .pdf, ...)"
    ),
) -> None:
    """Statistics of a trace: rate, burstiness, length percentiles, prefix reuse, drift."""
    refuse_empty({"FILE": file, "--plot": plot})
    is_url = file.startswith(("http://", "https://"))
    if fmt == "prometheus" or (fmt is None and not mapping and (is_url or _is_prom(file))):
        given = {"--map": mapping, "--skip-bad": skip_bad, "--window": window}
        _refuse_for_metrics({**given, "--lru-blocks": lru_blocks, "--plot": plot})
        m = metrics_summary(read_metrics(file))
        emit(m, as_json, lambda con: render_metrics(m, con))
        return
    try:
        window_s = parse_duration(window) if window else None
    except InputError as exc:  # 'duration '0' must be positive' did not name the flag
        raise InputError(f"--window: {exc}") from None
    if plot:  # a bad --plot path is refused before the trace is read
        from pdplan.workload.plot import check_plot_path

        check_plot_path(plot)
        check_output(plot, "--plot", {"FILE": file})
    w = read_workload(file, fmt=fmt, mapping=mapping, skip_bad=skip_bad)
    s = workload_stats(w, window_s=window_s, lru_blocks=lru_blocks)
    if plot:
        _write_plot(w, plot, window_s)
        s["plot"] = plot
    emit(s, as_json, lambda con: render_stats(s, con))
    if not as_json:
        warn_stats(s)


def _write_plot(w: Any, path: str, window_s: float | None) -> None:
    """The --plot image, complete or not at all (replaced_on_success). A .pgf is written in
    place: its raster panels go to PNG files beside it, named after it and referenced by name
    from it, so a temporary name would name them too."""
    from pdplan.workload.plot import plot_workload

    if path.lower().endswith(".pgf"):
        plot_workload(w, path, window_s)
        return
    try:
        with replaced_on_success(path) as tmp:
            plot_workload(w, path, window_s, to=tmp)
    except OSError as exc:  # the rename itself failed
        raise InputError(f"cannot write --plot: {exc.strerror or exc}", path=path) from None


def _write_trace(w: Any, path: str) -> str:
    """write_workload(w, path) through a temporary file renamed to `path` once complete, so a
    Ctrl-C or failed write leaves no truncated trace under `path`; returns the format."""
    try:
        with replaced_on_success(path) as tmp:
            return write_workload(w, path, to=tmp)
    except OSError as exc:  # the rename itself failed (write errors are InputError already)
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None


def _refuse_for_metrics(given: dict[str, object]) -> None:
    """A metrics scrape has histograms, not rows: the trace options would be ignored (a
    --plot exited 0 and wrote no image), so the ones given are refused by name."""
    flags = [flag for flag, value in given.items() if value not in (None, False)]
    if flags:
        raise ConfigError(
            f"{', '.join(flags)} {'applies' if len(flags) == 1 else 'apply'} to a trace file; "
            "a Prometheus metrics scrape is summarised as its histograms: drop "
            f"{'it' if len(flags) == 1 else 'them'}"
        )


def _is_prom(path: str) -> bool:
    try:
        return looks_like_prometheus(path)
    except InputError:
        return False


def synth(
    out: str = typer.Option(..., "--out", "-o", help=_OUT_HELP),
    n: int | None = typer.Option(None, "--requests", "-n", min=1, help="number of requests"),
    duration: str | None = typer.Option(None, "--duration", help="or a duration: 1h, 15m"),
    rate: float = typer.Option(1.0, "--rate", help=_RATE_HELP),
    arrival: str = typer.Option("poisson", "--arrival", help="poisson, gamma or fixed"),
    cv: float = typer.Option(
        None, "--cv", help="gamma burstiness: CV of inter-arrival gaps (default 1)"
    ),
    inp: str = typer.Option("fixed:1024", "--input", help=_LENGTH_HELP),
    outp: str = typer.Option("fixed:256", "--output", help="same forms as --input"),
    curve: str | None = typer.Option(None, "--curve", help=_CURVE_HELP),
    seed: int = typer.Option(0, "--seed", help="random seed (same seed, same trace)"),
    as_json: bool = typer.Option(False, "--json", help="print the stats as JSON"),
) -> None:
    """Write a synthetic trace (deterministic for a given seed)."""
    refuse_empty({"--out": out})
    if (n is None) == (duration is None):  # synthesize's own error names its parameters
        given = "both" if n is not None else "neither"
        raise ConfigError(
            f"give --requests/-n N or --duration (e.g. 1h) to size the trace: {given} given"
        )
    arrival = arrival.strip().lower()  # 'Gamma' as 'gamma', as --cv's check reads it
    if cv is not None and arrival != "gamma":
        raise ConfigError(
            f"--cv sets gamma arrivals' burstiness; --arrival {arrival} has a fixed CV "
            "(poisson 1, fixed 0): add --arrival gamma"
        )
    output_format(out)  # an unsupported extension is refused before any work
    check_output(out, "--out", _empirical_files(inp, outp))
    kw = dict(n=n, duration_s=duration, rate=rate, arrival=arrival, cv=1.0 if cv is None else cv)
    kw.update(input=inp, output=outp, rate_curve=curve, seed=seed)
    w = flag_named(lambda: synthesize(**kw), inp, outp)  # type: ignore[arg-type]
    kind = _write_trace(w, out)
    s = workload_stats(w)
    s.pop("joint_histogram")
    s["written"] = {"path": out, "format": kind, "requests": len(w)}

    def render(con: Console) -> None:
        render_stats(s, con)
        con.print(f"wrote {len(w):,} -> {out}")

    emit(s, as_json, render)
    if not as_json:
        warn_stats(s)


def _empirical_files(inp: str, outp: str) -> dict[str, str]:
    """{flag: FILE} of the traces --input / --output 'empirical:FILE' resample: --out must not
    replace one (synthesize reads it first, so the write would destroy it)."""
    specs = (("--input", inp), ("--output", outp))
    return {flag: v.partition(":")[2] for flag, v in specs if v.startswith("empirical:")}


def convert(
    src: str = typer.Argument(..., help="input trace"),
    dst: str = typer.Argument(
        ..., help="output: .jsonl (Mooncake layout), .csv, .parquet; .jsonl.gz / .csv.gz"
    ),
    fmt: str | None = typer.Option(None, "--format", "-f", help=_FORMAT_HELP),
    mapping: str | None = typer.Option(None, "--map", help=_MAP_HELP),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="skip malformed rows, count them"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Convert a trace to pdplan's layout (Mooncake column names, times in ms)."""
    refuse_empty({"SRC": src, "DST": dst})
    output_format(dst)  # refused before the (maybe large) trace is read
    check_output(dst, "DST", {"SRC": src})
    w = read_workload(src, fmt=fmt, mapping=mapping, skip_bad=skip_bad)
    kind = _write_trace(w, dst)
    notes = w.meta.get("warnings")
    warnings = [*(notes if isinstance(notes, list) else []), *_block_note(w, kind)]
    res = {
        "source": src,
        "written": dst,
        "format": kind,
        "requests": len(w),
        "skipped_total": w.meta.get("skipped_total", 0),
        "skipped": w.meta.get("skipped", {}),
        "warnings": warnings,
    }
    rows = [(k, v) for k, v in res.items() if v not in ({}, []) and k != "warnings"]
    emit(res, as_json, lambda con: con.print(kv_table("convert", rows)))
    if not as_json:  # on stderr: stdout holds the table alone
        for msg in warnings:
            warn(msg)


def _block_note(w: Any, kind: str) -> list[str]:
    """The written layout has no block-size field and is read as Mooncake's 512-token blocks."""
    if not w.has_hashes or w.block_tokens == 512:
        return []
    return [
        f"hash_ids are {w.block_tokens}-token blocks but this {kind} layout is read as 512-token "
        f"blocks: read it back with --format mooncake --map block_tokens={w.block_tokens}"
    ]


def register(app: typer.Typer) -> None:
    """Add the `workload` command group."""
    wl = typer.Typer(
        help="Real traffic in: inspect, synthesize and convert traces.", no_args_is_help=True
    )
    wl.command("inspect")(inspect)
    wl.command("synth")(synth)
    wl.command("convert")(convert)
    app.add_typer(wl, name="workload")
