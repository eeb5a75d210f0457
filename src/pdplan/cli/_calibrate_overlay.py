"""`pdplan calibrate --out`: the fitted factors merged into the overlay the run was given
(`pdplan --efficiency-file F calibrate ...`), so the written file alone reproduces the fit."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

from pdplan.cli._paths import replaced_on_success
from pdplan.errors import ConfigError, InputError

__all__ = ["check_replace", "merged_overlay", "write_overlay"]

# The commands that predict as each --method fitted: factors fitted to the simulator describe
# it, not the steady-state estimate (a sim fit on 20 vLLM H100 rows doubled their median
# estimate TPOT error, 6.1 -> 12.0 %)
_USE = {"estimate": "estimate", "sim": "simulate"}


def check_replace(path: str, base: str | None, force: bool) -> None:
    """Refuse, unless `force`, an --out that names a non-empty file other than `base` (the
    root's --efficiency-file, which the fit is merged into): the fit is written over it
    whole, so the engines' and GPUs' blocks it held (an earlier fit's) would be lost."""
    out = Path(path)
    if force or not out.is_file() or out.stat().st_size == 0:
        return
    if base and Path(base).is_file() and os.path.samefile(out, base):
        return
    raise ConfigError(
        f"--out {path} exists: writing the fit over it would lose what it holds; merge the "
        f"fit into it (pdplan --efficiency-file {path} calibrate ...), or add --force to "
        "replace it"
    )


def merged_overlay(
    fields: dict[str, float], engine: str, gpu: str | None, covered: set[str]
) -> tuple[dict[str, Any], list[str]]:
    """The overlay in place (perf.efficiency.efficiency_overrides; {} when none) with `fields`
    set in `engine`'s block (its `gpus: {gpu: ...}` block with --gpu); every other field and
    block kept. Fitted without --gpu, the fields replace the overlay's own per-GPU values on
    the `covered` GPUs (the fit's rows set them everywhere), which are dropped and listed."""
    from pdplan.perf.efficiency import efficiency_overrides

    table = efficiency_overrides()
    block = table.setdefault(engine, {})
    if gpu:
        block.setdefault("gpus", {}).setdefault(gpu, {}).update(fields)
        return table, []
    block.update(fields)
    dropped = []
    per_gpu: dict[str, dict[str, Any]] = block.get("gpus", {})
    for g in sorted(covered & set(per_gpu)):
        for name in [n for n in per_gpu[g] if n in fields]:
            del per_gpu[g][name]
            dropped.append(f"{g}.{name}")
        if not per_gpu[g]:
            del per_gpu[g]
    if "gpus" in block and not per_gpu:
        del block["gpus"]
    return table, dropped


def write_overlay(path: str, rep: dict[str, Any], base: str | None, covered: set[str]) -> None:
    """The fitted factors as an --efficiency-file overlay (merged into `base`'s, the overlay
    the run was given), behind a header saying where they came from; complete or not at all
    (a temporary file renamed to `path` once written)."""
    import yaml

    fields = {p["name"]: float(f"{p['after']:.6g}") for p in rep["params"]}
    table, dropped = merged_overlay(fields, rep["engine"], rep["gpu"], covered)
    text = _header(path, rep, base, dropped) + yaml.safe_dump({"engines": table}, sort_keys=False)
    try:
        with replaced_on_success(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", path=path) from exc


def _header(path: str, rep: dict[str, Any], base: str | None, dropped: list[str]) -> str:
    src = " ".join(str(rep["measured"]).split())
    b, a = rep["before"], rep["after"]
    lines = [
        f"# pdplan calibrate: {rep['engine']} efficiency factors fitted on {src}",
        f"# ({rep['rows']} aggregated rows{' on ' + rep['gpu'] if rep['gpu'] else ''}, "
        f"method {rep['method']}, maxiter {rep['maxiter']}), {datetime.date.today().isoformat()}",
        f"# median absolute error before -> after: TTFT {_pct(b['ttft'])} -> {_pct(a['ttft'])}, "
        f"TPOT {_pct(b['tpot'])} -> {_pct(a['tpot'])}",
    ]
    if base:
        one = " ".join(base.split())
        lines.append(
            f"# merged into --efficiency-file {one}: its other fields and blocks kept as they "
            "were, the fitted fields set"
            + (
                f", its per-GPU {', '.join(dropped)} dropped (the fit replaced them)"
                if dropped
                else ""
            )
        )
    lines.append(f"# use: pdplan --efficiency-file {path} {_USE[rep['method']]} ...")
    return "\n".join(lines) + "\n"


def _pct(s: dict[str, Any]) -> str:
    return "-" if s["median"] is None else f"{s['median']:.1f} %"
