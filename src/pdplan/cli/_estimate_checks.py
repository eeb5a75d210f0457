"""`pdplan estimate`'s option checks: a layout option given a deployment, options --mode ignores."""

from __future__ import annotations

import re

from pdplan.errors import ConfigError

__all__ = ["check_mode_options", "one_instance"]

_COUNTS = {"--prefill-layout": "--prefill-workers", "--decode-layout": "--decode-workers"}


def one_instance(opt: str, text: str) -> None:
    """Refuse, pointing to the options that say it, a layout option given a deployment
    (pools, or xN instances: `pdplan simulate --deployment`'s form) or a layout whose parts
    run together ('tp4ep4')."""
    from pdplan.sim.deploy import layout_syntax_error, parse_deployment

    if not re.search(r"[+:@]|x\s*\d+\s*$", text.strip(), flags=re.I):
        bad = layout_syntax_error(text)
        if bad is not None:
            raise ConfigError(f"{opt} {text}: {bad}")
        return
    head = f"{opt} {text}: estimate's {opt} takes one instance's layout"
    try:
        pools = parse_deployment(text)
    except ConfigError:
        raise ConfigError(f"{head} (e.g. tp4, tp8-ep8), not a deployment") from None
    gpus = sorted({p.gpu for p in pools if p.gpu})
    on = f"; the GPU is --gpu {gpus[0]}" if len(gpus) == 1 else ""
    if len(pools) == 2 and {p.role for p in pools} == {"prefill", "decode"}:
        pre, dec = sorted(pools, key=lambda p: p.role != "prefill")
        raise ConfigError(
            f"{head}, not P / D pools: use --mode disagg --prefill-layout {pre.layout} "
            f"--decode-layout {dec.layout} --prefill-workers {pre.count} "
            f"--decode-workers {dec.count}{on}"
        )
    if len(pools) == 1 and pools[0].role == "agg":
        lay, n = pools[0].layout, pools[0].count
        if not re.search(r"x\s*\d+\s*(@.*)?$", text.strip(), flags=re.I):
            raise ConfigError(f"{head}: {opt} {lay}{on}")
        where = (
            f"give the count as {_COUNTS[opt]} {n}"
            if opt in _COUNTS
            else f"it models one instance under --concurrency clients (`pdplan simulate "
            f"--deployment {text}` runs {n})"
        )
        raise ConfigError(f"{head}, without xN: {opt} {lay}; {where}{on}")
    raise ConfigError(f"{head} (e.g. tp4, tp8-ep8), not a deployment of several pools")


def check_mode_options(
    mode: str, agg_only: dict[str, object], disagg_only: dict[str, object]
) -> None:
    """Refuse, in one line, an option given that the chosen --mode would silently ignore
    (options left unset are None)."""
    wrong = disagg_only if mode == "agg" else agg_only
    other = "disagg" if mode == "agg" else "agg"
    given = [name for name, value in wrong.items() if value is not None]
    if given:
        names = ", ".join(given)
        raise ConfigError(
            f"{names} only appl{'ies' if len(given) == 1 else 'y'} with --mode {other}, "
            f"not --mode {mode}"
        )
