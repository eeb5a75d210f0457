"""`pdplan calibrate`'s tables and warnings."""

from __future__ import annotations

from typing import Any

from pdplan.cli._common import num

__all__ = ["render", "skip_reasons", "warnings_of"]


def skip_reasons(why: dict[str, list[str]]) -> list[dict[str, Any]]:
    """plan.calibrate.fit_cases's reason -> rows as `pdplan accuracy` reports them: each
    reason with its row count and the first row as an example."""
    return [{"reason": r, "rows": len(ids), "example": ids[0]} for r, ids in sorted(why.items())]


def _start_warnings(params: list[dict[str, Any]]) -> list[str]:
    """A starting value outside its factor's bounds (a user overlay's): the search starts just
    inside them instead (plan.calibrate.from_params)."""
    out = []
    for p in params:
        v = p.get("before")
        if v is None or p["low"] <= v <= p["high"]:
            continue
        side, bound = ("upper", p["high"]) if v > p["high"] else ("lower", p["low"])
        out.append(
            f"{p['name']} starts at {num(v)}, outside its {side} bound {num(bound)}: the search "
            f"started at the bound instead and stays within [{num(p['low'])}, {num(p['high'])}]"
        )
    return out


def warnings_of(rep: dict[str, Any], holdout: bool = True) -> list[str]:
    """What the user should distrust in a fit: a factor on its bound, too few rows for the
    factors (plan.calibrate.ROWS_PER_PARAM), no held-out check although one was asked for
    (`holdout`; --no-holdout asks for none), a held-out median error over 5 % above the
    starting one."""
    from pdplan.plan.calibrate import ROWS_PER_PARAM

    out = _start_warnings(rep["params"])
    dup = rep.get("duplicates") or {}
    if dup.get("rows"):
        n = dup["rows"]
        out.append(
            f"{n} row{'s' if n > 1 else ''} repeat{'' if n > 1 else 's'} an earlier row exactly "
            f"(same setup and measurements, e.g. {dup['example']}): kept, so each counts again "
            "in the fit; remove copied rows, keep true repeats"
        )
    for p in rep["params"]:
        if p["at_bound"]:
            side = "upper" if p["after"] > (p["low"] + p["high"]) / 2 else "lower"
            out.append(
                f"{p['name']} ended at its {side} bound ({num(p['after'])}): the data push it "
                "past what is physical, a sign the model cannot explain them that way"
            )
    k, n = len(rep["params"]), rep["rows"]
    if n < ROWS_PER_PARAM * k:
        out.append(
            f"{n} rows for {k} factor{'s' if k > 1 else ''} (fewer than {ROWS_PER_PARAM} "
            "per factor): the fit may follow noise; fit fewer --params or measure more rows"
        )
    for key in ("ttft", "tpot"):
        a, b = rep["after"][key]["median"], rep["before"][key]["median"]
        if a is not None and b is not None and a > 1.05 * b:  # 5 %: as for held out, below
            out.append(
                f"the fit raised its own rows' median {key.upper()} error ({b:.1f} -> {a:.1f} "
                "%): the robust loss weighs every row and both metrics, not the median; keep "
                "the starting values or fit fewer --params"
            )
    return out + _held_warnings(rep, holdout)


def _held_warnings(rep: dict[str, Any], holdout: bool) -> list[str]:
    """No held-out check although one was asked for, or a held-out error above the start's."""
    held, out = rep["held_out"], []
    if held is None:
        if holdout:
            out.append("the rows cover one model on one GPU: no held-out check of the fit")
        return out
    for key in ("ttft", "tpot"):
        h, b = held["errors"][key]["median"], rep["before"][key]["median"]
        # 5 % of the error itself: closer than that is within the noise of a median
        if h is not None and b is not None and h > 1.05 * b:
            out.append(
                f"held-out {key.upper()} error ({h:.1f} %) is above the starting values' "
                f"({b:.1f} %): the fit does not carry over to unseen {held['by']}s"
            )
    return out


def _cells(s: dict[str, Any]) -> list[str]:
    vals = (s["ttft"]["median"], s["ttft"]["p90"], s["tpot"]["median"], s["tpot"]["p90"])
    return ["-" if v is None else f"{v:.1f}" for v in vals]


def render(rep: dict[str, Any], con: Any) -> None:
    """The factors (before -> after, bounds), then the errors before, fitted and held out."""
    from rich.table import Table

    where = f"{rep['engine']}" + (f" on {rep['gpu']}" if rep["gpu"] else "")
    t = Table(title=f"calibrate {where}: efficiency factors")
    for c in ("factor", "before", "after", "bounds", ""):
        t.add_column(c, justify="left" if c in ("factor", "") else "right")
    for p in rep["params"]:
        bounds = f"[{num(p['low'])}, {num(p['high'])}]"
        flag = "at bound" if p["at_bound"] else ""
        t.add_row(p["name"], num(p["before"]), num(p["after"]), bounds, flag)
    con.print(t)
    e = Table(title=f"absolute % error ({rep['method']}, {rep['rows']} rows)")
    e.add_column("values", no_wrap=True)
    for c in ("TTFT med", "TTFT p90", "TPOT med", "TPOT p90"):
        e.add_column(c, justify="right")
    e.add_row("before", *_cells(rep["before"]))
    e.add_row("fitted (on these rows)", *_cells(rep["after"]))
    held = rep["held_out"]
    if held is not None:
        label = f"held out (each {held['by']} in turn, {len(held['groups'])})"
        e.add_row(label, *_cells(held["errors"]))
    con.print(e)
    _tail(rep, con)


def _tail(rep: dict[str, Any], con: Any) -> None:
    """The rows fitted, skipped (and why) and the file written."""
    tail = f"fitted on {rep['rows']} aggregated {rep['engine']} rows"
    if rep["skipped"]:
        tail += f" ({rep['skipped']} rows skipped: unreadable, or not predictable)"
    con.print(tail + (f"; wrote {rep['out']}" if rep["out"] else ""), markup=False)
    for s in rep.get("skipped_reasons", ()):
        con.print(f"  skipped {s['rows']}: {s['reason']} (e.g. {s['example']})", markup=False)
