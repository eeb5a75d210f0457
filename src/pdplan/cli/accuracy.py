"""`pdplan accuracy`: predict measured serving rows and report the cost model's errors."""

from __future__ import annotations

from typing import Any

import typer

from pdplan.cli._common import emit, refuse_empty
from pdplan.cli._paths import check_output, replaced_on_success
from pdplan.errors import ConfigError, InputError
from pdplan.perf.repeats import exact_copies

__all__ = ["ROWS_HELP", "register"]

# The --rows columns (plan.accuracy.prediction_record) and their units.
ROWS_HELP = (
    "also write every predicted row to CSV, columns: id, backend, version, model, system, mode, "
    "layout (prefill|decode when disagg), isl / osl (tokens), concurrency (clients of one "
    "instance), spec_decode (METHOD:K:ACCEPTANCE as predicted) and spec_decode_from (column or "
    "recipe), recipe (launch settings), measured_ / predicted_ ttft_ms and tpot_ms (ms; TPOT "
    "empty for OSL 1), ttft_ape / tpot_ape (absolute error, % of measured), kv_use (clients x "
    "(ISL + OSL) / KV tokens held; > 1: KV-bound)"
)


def accuracy_cmd(
    measured: str = typer.Option(
        ...,
        "--measured",
        help="CSV in measured_serving.csv format (optional spec_decode column: mtp:3, "
        "eagle:2:0.8 or none)",
    ),
    mode: str | None = typer.Option(None, help="only agg or only disagg rows (default: both)"),
    simulate: bool = typer.Option(False, "--simulate", help="predict by simulating each setup"),
    client: str | None = typer.Option(
        None,
        "--client",
        help="with --simulate: benchmark client, 'fixed' (exact ISL/OSL, the default), 'random' "
        "(lengths uniform in [0.8 L, L], 10 requests per client: InferenceMAX's sweeps) or "
        "'auto' (random for rows whose source names an InferenceMAX run, else fixed)",
    ),
    rows_out: str | None = typer.Option(None, "--rows", help=ROWS_HELP),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Median and p90 absolute percentage error of TTFT and TPOT, grouped by system/model/engine."""
    from pdplan.plan.accuracy import run_accuracy, simulate_row

    refuse_empty({"--measured": measured, "--rows": rows_out})
    client = _check_options(mode, simulate, client)
    _check_paths(measured, rows_out)
    kw: dict[str, Any] = {"predictor": lambda row: simulate_row(row, client)} if simulate else {}
    preds: list = []
    rep = run_accuracy(measured, mode=mode, collect=preds, **kw)
    if rep["predicted"] == 0 and rep["skipped"] == 0:
        what = f"no rows with mode {mode}" if mode else "no data rows (header only)"
        raise InputError(f"{what}: nothing to predict", path=measured)
    if rows_out:
        _write_rows(rows_out, preds)
        rep["rows_file"] = rows_out
    rep["method"] = f"simulate ({client} client)" if simulate else "estimate"
    rep["duplicates"] = exact_copies(p.row for p in preds)

    emit(rep, as_json, lambda con: _render(rep, con))
    if rep["predicted"] == 0:  # every row skipped: the report lists why; the run failed
        raise InputError(_none_predicted(rep, mode), path=measured)


def _none_predicted(rep: dict, mode: str | None) -> str:
    """Why the run failed when no row was predicted, with the first skip reason (the report,
    on stdout, lists each: "reasons above" named nothing when stdout went to a file or
    --json); rows --mode left out are not "the only row"."""
    n, left = rep["skipped"], rep["left_out_by_mode"]
    reasons = rep.get("skipped_reasons") or []
    why = f"{reasons[0]['reason']} (e.g. {reasons[0]['example']})" if reasons else "see the report"
    if len(reasons) > 1:
        why += f"; {len(reasons) - 1} more reason(s) in the report"
    if left:
        return (
            f"no row could be predicted: {n} skipped ({why}), {left} not {mode} "
            f"left out by --mode {mode}"
        )
    what = "the only row could not" if n == 1 else f"none of the {n} rows could"
    return f"{what} be predicted: {why}"


def _check_options(mode: str | None, simulate: bool, client: str | None) -> str:
    """Refuse an unknown --mode or --client, and a --client without --simulate (the estimate
    has no benchmark client); the client to simulate with."""
    from pdplan.plan.accuracy import MODES
    from pdplan.plan.accuracy_sim import CLIENTS

    if mode is not None and mode not in MODES:
        raise ConfigError(
            f"--mode must be {' or '.join(MODES)} (omit it for every row), not {mode!r}"
        )
    if client is not None and client not in (*CLIENTS, "auto"):
        raise ConfigError(f"--client must be auto or one of {', '.join(CLIENTS)}, not {client!r}")
    if client not in (None, "auto") and not simulate:
        raise ConfigError(f"--client only applies with --simulate (got --client {client})")
    return client or "fixed"


def _check_paths(measured: str, rows_out: str | None) -> None:
    """Before any row is predicted: the measured file is UTF-8 text (not gzip'd, not Latin-1;
    the error names the first line that is not), and --rows can be written."""

    try:
        with open(measured, "rb") as fh:
            head = fh.read(2)
            if not head:
                raise InputError("empty file: expected a header and measured rows", path=measured)
            if head == b"\x1f\x8b":  # gzip magic (RFC 1952)
                raise InputError("gzip-compressed: gunzip it first", path=measured)
            fh.seek(0)
            for n, raw in enumerate(fh, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(
                        "not UTF-8 text: re-save as UTF-8", path=measured, line=n
                    ) from None
    except OSError:
        return  # the reader names a missing / unreadable file
    if rows_out:
        check_output(rows_out, "--rows", {"--measured": measured})


def _render(rep: dict, con: Any) -> None:
    """One table per mode (all rows, then by system, engine, model), then the skipped rows."""
    from rich.table import Table

    for m in ("agg", "disagg"):
        if m not in rep:
            continue
        t = Table(title=f"{m} rows: absolute % error ({rep['method']})")
        t.add_column("group", no_wrap=True)
        for c in ("rows", "TTFT med", "TTFT p90", "TPOT med", "TPOT p90"):
            t.add_column(c, justify="right")
        sec = rep[m]
        groups = [("all", sec["overall"])]
        for k in ("by_system", "by_backend", "by_model"):
            groups += list(sec[k].items())
        if len(sec["by_decoding"]) > 1:  # speculative rows beside plain ones
            groups += [(f"decoding {k}", v) for k, v in sec["by_decoding"].items()]
        for name, s in groups:
            a, b = s["ttft_ape"], s["tpot_ape"]
            cells = (a.get("median"), a.get("p90"), b.get("median"), b.get("p90"))
            # "-": no defined value (the TPOT of one-token rows)
            t.add_row(name, str(a["n"]), *("-" if v is None else f"{v:.1f}" for v in cells))
        con.print(t)
        if "repeats" in sec:
            con.print(_repeats_line(sec["repeats"]))
    left = rep["left_out_by_mode"]  # so the counts add up to the file's data lines
    con.print(
        f"predicted {rep['predicted']} row{'' if rep['predicted'] == 1 else 's'}, "
        f"skipped {rep['skipped']}"
        + (f", left out {left} of the other mode (--mode)" if left else "")
    )
    for s in rep["skipped_reasons"]:
        con.print(f"  skipped {s['rows']}: {s['reason']} (e.g. {s['example']})")
    dup = rep.get("duplicates") or {}
    if dup.get("rows"):  # copied rows count twice in every median above
        n = dup["rows"]
        con.print(
            f"  note: {n} predicted row{'s' if n > 1 else ''} repeat{'' if n > 1 else 's'} an "
            f"earlier row exactly (same setup and measurements, e.g. {dup['example']}): each "
            "counts again in the medians; remove copied rows, keep true repeats"
        )
    for s in rep.get("shape_by_name", ()):  # fine-tunes read as their base preset's shape
        con.print(
            f"  note: {s['rows']} rows of {s['model']} (not in the catalog) were read as "
            f"{s['read_as']}'s shape, by its name's family and size"
        )


def _repeats_line(rep: dict) -> str:
    """The file's noise floor in words: its setups measured more than once, and how far their
    measurements lie from each setup's own geometric mean (perf.repeats.repeat_spread)."""
    if not rep["setups"]:
        return "measurement repeats: no setup was measured more than once (no noise floor)"
    a, b = rep["ttft_ape"], rep["tpot_ape"]
    tpot = f"{b['median']:.1f} % TPOT (p90 {b['p90']:.1f})" if b["n"] else "no TPOT"
    n = rep["setups"]
    return (
        f"measurement repeats: {n} setup{'s' if n != 1 else ''} measured more than once "
        f"({a['n']} distinct measurements), against their own setup's geometric mean: a median "
        f"{a['median']:.1f} % TTFT (p90 {a['p90']:.1f}) / {tpot}; no predictor of the setup "
        "does better on those rows"
    )


def _write_rows(path: str, preds: list) -> None:
    """Every prediction as one CSV line (plan.accuracy.prediction_record columns)."""
    import csv

    from pdplan.plan.accuracy import prediction_record

    records = [prediction_record(p) for p in preds]
    try:  # complete or not at all: a temporary file renamed to `path` once written
        with replaced_on_success(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(records[0]) if records else ["id"])
            w.writeheader()
            w.writerows(records)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc


def register(app: typer.Typer) -> None:
    app.command("accuracy")(accuracy_cmd)
