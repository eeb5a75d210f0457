"""`pdplan calibrate`: fit an engine's efficiency factors to the user's measured runs and
write them as an overlay for `pdplan --efficiency-file`."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import typer

from pdplan.cli._calibrate_overlay import check_replace, write_overlay
from pdplan.cli._calibrate_render import render, skip_reasons, warnings_of
from pdplan.cli._common import emit, note, refuse_empty, refuse_ignored, warn
from pdplan.cli._paths import check_output
from pdplan.errors import ConfigError, InputError
from pdplan.perf.repeats import exact_copies

__all__ = ["register"]


def calibrate_cmd(
    ctx: typer.Context,
    measured: str = typer.Option(
        ...,
        "--measured",
        help="CSV in measured_serving.csv format (its aggregated rows are fitted)",
    ),
    engine: str | None = typer.Option(
        None, "--engine", help="engine whose factors to fit (default: the rows' only engine)"
    ),
    gpu: str | None = typer.Option(
        None, "--gpu", help="fit only this GPU's rows, written as a per-GPU block"
    ),
    params: str | None = typer.Option(
        None,
        "--params",
        help="comma-separated factors to fit (default: every bounded one the method reads)",
    ),
    method: str = typer.Option(
        "estimate", "--method", help="predict rows with the steady-state 'estimate' or 'sim'"
    ),
    maxiter: int = typer.Option(
        2, "--maxiter", help="Powell sweeps (each: a line search per factor)"
    ),
    out: str | None = typer.Option(None, "--out", help="write the fitted factors to this YAML"),
    force: bool = typer.Option(
        False,
        "--force",
        help="let --out replace an existing file (else refused, unless it is "
        "the --efficiency-file, which the fit is merged into)",
    ),
    holdout: bool = typer.Option(
        True, "--holdout/--no-holdout", help="leave-one-model-out check (or one GPU out)"
    ),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Fit the cost model's efficiency factors to measured rows, within physical bounds."""
    from pdplan.cli.accuracy import _check_paths
    from pdplan.perf.measured import read_measured
    from pdplan.plan import calibrate as cal

    refuse_empty({"--measured": measured, "--out": out, "--engine": engine, "--gpu": gpu})
    names = _check_options(params, method, maxiter)
    _check_paths(measured, None)
    if out:
        # --out may be the --efficiency-file: the fit is merged into it (write_overlay)
        check_output(out, "--out", {"--measured": measured}, may_replace="--efficiency-file")
        check_replace(out, ctx.find_root().params.get("efficiency_file"), force)
    elif force:
        refuse_ignored({"--force": force}, "with --out")
    items = list(read_measured(measured))
    eng = _engine(engine, items, measured)
    setup = cal.FitSetup(names, method)
    why: dict[str, list[str]] = {}
    cases, skipped = cal.fit_cases(items, eng, gpu, setup, why)
    if not cases:
        raise InputError(_nothing_to_fit(eng, gpu, items, why), path=measured)
    rep = _run(cases, setup, maxiter, holdout, gpu)
    rep.update(measured=measured, engine=eng, skipped=skipped, out=out)
    rep.update(skipped_reasons=skip_reasons(why), duplicates=exact_copies(c.row for c in cases))
    rep["warnings"] = warnings_of(rep, holdout)
    if out:  # merged into the overlay the run was given (the root's --efficiency-file)
        write_overlay(out, rep, ctx.find_root().params.get("efficiency_file"), _gpus(cases))
    emit(rep, as_json, lambda con: render(rep, con))
    if not as_json:
        for w in rep["warnings"]:
            warn(w)


def _nothing_to_fit(eng: str, gpu: str | None, items: list[Any], why: dict[str, list[str]]) -> str:
    """Why no row could be fitted: what the file has, and the first reasons rows were skipped
    (three: the usual few, one line of the error each)."""
    on = f" on {gpu}" if gpu else ""
    skips = "".join(
        f"; skipped {s['rows']}: {s['reason']} (e.g. {s['example']})" for s in skip_reasons(why)[:3]
    )
    return f"no predictable aggregated {eng} rows{on}: nothing to fit{_has(items)}{skips}"


def _gpus(cases: list[Any]) -> set[str]:
    from pdplan.catalog.gpus import get_gpu

    return {get_gpu(c.row.system).name for c in cases}


def _has(items: list[Any]) -> str:
    """'; the file has: vllm on h100_sxm, b200_sxm; ...' (its aggregated rows' engines and
    systems), so a user sees what --engine / --gpu could name."""
    from pdplan.perf.efficiency import canonical_engine

    by: dict[str, set[str]] = {}
    for r in items:
        if not isinstance(r, tuple) and r.mode == "agg":
            by.setdefault(canonical_engine(r.backend), set()).add(r.system)
    parts = [f"{e} on {', '.join(sorted(g))}" for e, g in sorted(by.items())]
    return f"; the file has {'; '.join(parts)}" if parts else ""


def _check_options(params: str | None, method: str, maxiter: int) -> tuple[str, ...]:
    """The factors to fit; ConfigError for a bad --method / --maxiter / --params, or when
    scipy, which the fit needs, is not installed (before any row is read)."""
    from pdplan.plan.calibrate import METHODS, SIM_ONLY, check_params, default_params

    if method not in METHODS:
        raise ConfigError(f"--method must be {' or '.join(METHODS)}, not {method!r}")
    if maxiter < 1:
        raise ConfigError(f"--maxiter must be at least 1, not {maxiter}")
    names = check_params(params.split(",")) if params is not None else default_params(method)
    unread = [n for n in names if n in SIM_ONLY and method == "estimate"]
    if unread:
        raise ConfigError(
            f"the estimate never reads {', '.join(unread)} (the simulator's benchmark client "
            "does): fit it with --method sim"
        )
    if importlib.util.find_spec("scipy") is None:
        raise ConfigError("calibrate needs scipy: pip install 'pdplan[calibrate]'")
    return names


def _engine(engine: str | None, items: list[Any], path: str) -> str:
    """--engine (canonical), else the only engine of the file's aggregated rows."""
    from pdplan.perf.efficiency import canonical_engine

    if engine is not None:
        return canonical_engine(engine)
    seen = sorted(
        {canonical_engine(r.backend) for r in items if not isinstance(r, tuple) and r.mode == "agg"}
    )
    if not seen:
        disagg = any(not isinstance(r, tuple) for r in items)
        why = "no readable aggregated rows"
        if disagg:
            why = "its rows are all disaggregated (calibrate fits aggregated ones)"
        raise InputError(f"{why}: nothing to fit", path=path)
    if len(seen) > 1:
        raise ConfigError(
            f"the rows are of {len(seen)} engines ({', '.join(seen)}): pick one with --engine"
        )
    return seen[0]


def _run(
    cases: list[Any], setup: Any, maxiter: int, holdout: bool, gpu: str | None
) -> dict[str, Any]:
    """Fit from the engine's current values; errors before, after and held out."""
    import numpy as np

    from pdplan.catalog.gpus import get_gpu
    from pdplan.perf.efficiency import get_efficiency
    from pdplan.plan import calibrate as cal

    g = get_gpu(gpu) if gpu else None
    base = get_efficiency(cases[0].row.backend, g.name if g else None, g.hbm_gib if g else None)
    start = {n: float(getattr(base, n)) for n in setup.params}
    group = cal.group_of(cases) if holdout else None
    tell = _progress(setup.method, len(cases), group[0] if group else None)
    fitted = cal.fit(cases, start, setup, maxiter)
    rep: dict[str, Any] = {
        "gpu": g.name if g else None,
        "method": setup.method,
        "maxiter": maxiter,
        "rows": len(cases),
        "params": [_param(n, start[n], fitted[n]) for n in setup.params],
        "before": cal.ape_stats(cal.ratios(cases, start, setup)),
        "after": cal.ape_stats(cal.ratios(cases, fitted, setup)),
        "held_out": None,
    }
    if group is not None:
        by = cal.held_out(cases, start, setup, maxiter, group[1], tell)
        rep["held_out"] = {
            "by": group[0],
            "groups": list(by),
            "errors": cal.ape_stats(np.vstack(list(by.values()))),
        }
    return rep


def _progress(method: str, rows: int, by: str | None) -> Callable[[str, int, int], None] | None:
    """For --method sim (every trial simulates every row: minutes), a note on stderr now and
    before each held-out fit, so a long run shows it is working; None for the estimate."""
    if method != "sim":
        return None
    more = f", then one more per held-out {by}" if by else ""
    note(f"--method sim: fitting on {rows} rows, each trial simulating every row{more}")

    def tell(group: str, i: int, n: int) -> None:
        note(f"held-out fit {i} of {n} (without {by} {group})")

    return tell


def _param(name: str, before: float, after: float) -> dict[str, Any]:
    from pdplan.plan.calibrate import BOUNDS, at_bound

    lo, hi, _ = BOUNDS[name]
    return {"name": name, "before": before, "after": after, "low": lo, "high": hi,
            "at_bound": at_bound(name, after)}  # fmt: skip


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate_cmd)
