"""Fit the cost model's efficiency factors to measured serving rows: the core of `pdplan
calibrate` and benchmarks/fit_efficiency.py. Each parameter moves only within its physical
bounds (a logistic map of an unbounded search variable onto [low, high], log-scaled where the
bounds span decades); Powell's method (scipy, the `calibrate` extra, imported only in fit)
minimises a robust loss on log(predicted / measured) of TTFT and TPOT, each row predicted as
`pdplan accuracy` predicts it: the steady-state estimate, or the simulator."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from pdplan.catalog.gpus import get_gpu
from pdplan.errors import ConfigError, PdplanError
from pdplan.perf.efficiency import Efficiency, canonical_engine, get_efficiency
from pdplan.perf.measured import MeasuredRow
from pdplan.plan.accuracy import predict_row
from pdplan.plan.accuracy_sim import simulate_measured_row

__all__ = [
    "BOUNDS",
    "METHODS",
    "ROWS_PER_PARAM",
    "Case",
    "FitSetup",
    "ape_stats",
    "at_bound",
    "check_params",
    "default_params",
    "fit",
    "fit_cases",
    "group_of",
    "held_out",
    "ratios",
]

# name: (low, high, log-scale?): the physical bounds documented beside each field in
# perf/data/efficiency.yaml (etas: fractions of a datasheet peak; *_s: seconds)
BOUNDS: dict[str, tuple[float, float, bool]] = {
    "gemm_eta": (0.5, 0.85, False),
    "gemm_m_half": (8.0, 256.0, True),
    "mem_eta": (0.6, 0.92, False),
    "fp8_stream_eta": (0.5, 1.0, False),
    "attn_eta": (0.3, 0.8, False),
    "attn_mem_eta": (0.4, 0.92, False),
    "moe_eta": (0.4, 1.0, False),
    "kernel_s": (5e-7, 1e-5, True),
    "step_s": (1e-4, 1e-2, True),
    "seq_s": (1e-7, 5e-5, True),
    "prompt_token_s": (1e-8, 3e-5, True),
    "coll_alpha_s": (2e-6, 3e-5, True),
    "coll_eta": (0.5, 0.9, False),
    "ttft_overhead_s": (1e-3, 0.3, True),
    "bench_rounds": (1.0, 20.0, True),
}
# Read only by the simulator's benchmark client (plan/accuracy_sim.py), never by the estimate
SIM_ONLY = ("ttft_overhead_s", "bench_rounds")
METHODS = ("estimate", "sim")
# Rule of thumb for a trustworthy fit: at least 10 rows per fitted parameter (the usual
# "ten events per variable" of regression practice; each row gives a TTFT and a TPOT, but the
# two share the row's setup, so they count as one)
ROWS_PER_PARAM = 10
# loss "within": the accuracy targets (TTFT within 20 %, TPOT within 12 %) as log bands
WITHIN = np.log(np.array([1.20, 1.12]))
# a failed prediction counts as 10x off (log error 2.3): worse than any row the model explains
FAILED = 10.0


@dataclass(frozen=True)
class FitSetup:
    """What to fit and how: `params` (names of BOUNDS), `method` (METHODS), the simulator's
    benchmark `client` (plan/accuracy_sim.py CLIENTS), and the loss: "cauchy" (robust, on the
    log error with `scale`) or "within" (smooth share of rows outside the targets)."""

    params: tuple[str, ...]
    method: str = "estimate"
    client: str = "fixed"
    scale: float = 0.2
    loss: str = "cauchy"


@dataclass(frozen=True)
class Case:
    """A measured row and its engine's efficiencies on the row's GPU (the starting values)."""

    row: MeasuredRow
    base: Efficiency


def default_params(method: str, client: str = "fixed") -> tuple[str, ...]:
    """Every bounded parameter the method reads: the estimate never reads SIM_ONLY, and a
    'random' client fixes the requests per client, so bench_rounds has nothing to fit."""
    skip = SIM_ONLY if method == "estimate" else ("bench_rounds",) if client == "random" else ()
    return tuple(n for n in BOUNDS if n not in skip)


def check_params(names: Iterable[str]) -> tuple[str, ...]:
    """`names` (blanks dropped, order kept, repeats once), or ConfigError listing the valid."""
    out = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    bad = [n for n in out if n not in BOUNDS]
    if bad or not out:
        what = f"unknown parameter(s) {', '.join(bad)}" if bad else "no parameter named"
        raise ConfigError(f"{what}; fittable: {', '.join(BOUNDS)}")
    return out


def case_of(row: MeasuredRow) -> Case:
    gpu = get_gpu(row.system)
    return Case(row, get_efficiency(row.backend, gpu.name, gpu.hbm_gib))


def _unit(name: str, value: float) -> float:
    """`value`'s place in its bounds, 0 at low and 1 at high (log-scaled where BOUNDS says)."""
    lo, hi, log = BOUNDS[name]
    if log:
        return (math.log(value) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return (value - lo) / (hi - lo)


def to_params(x: np.ndarray, names: tuple[str, ...]) -> dict[str, float]:
    """The search variables `x` as parameter values: logistic(x) placed within the bounds."""
    out = {}
    for v, n in zip(x, names, strict=True):
        lo, hi, log = BOUNDS[n]
        s = 1 / (1 + math.exp(-float(v)))
        v = math.exp(math.log(lo) + s * math.log(hi / lo)) if log else lo + s * (hi - lo)
        out[n] = min(max(v, lo), hi)  # exp / log rounding may land an ulp outside
    return out


def from_params(values: dict[str, float], names: tuple[str, ...]) -> np.ndarray:
    """The search variables of `values`, each first clipped just inside its bounds."""
    x = []
    for n in names:
        lo, hi = BOUNDS[n][:2]
        s = _unit(n, min(max(values[n], lo * 1.0001), hi * 0.9999))
        x.append(math.log(s / (1 - s)))
    return np.array(x)


def at_bound(name: str, value: float) -> bool:
    """`value` ends within 1 % of its bounds' span (log span where log-scaled) of a bound."""
    s = _unit(name, value)
    return s < 0.01 or s > 0.99


def _ratio(case: Case, values: dict[str, float], setup: FitSetup) -> tuple[float, float]:
    """Predicted over measured TTFT and TPOT of one row (TPOT NaN for a one-token row: it has
    no measured TPOT); PdplanError when the values cannot predict it."""
    row, eff = case.row, case.base.with_(**values)
    if setup.method == "sim":
        p = simulate_measured_row(row, eff, setup.client)
    else:
        p = predict_row(row, eff)
    return p.ttft_ms / row.ttft_ms, p.tpot_ms / row.tpot_ms if row.osl > 1 else math.nan


def _predict(case: Case, values: dict[str, float], setup: FitSetup) -> tuple[float, float]:
    """_ratio, or FAILED for a row the trial values cannot predict."""
    try:
        return _ratio(case, values, setup)
    except PdplanError:
        return FAILED, FAILED if case.row.osl > 1 else math.nan


def ratios(cases: list[Case], values: dict[str, float], setup: FitSetup) -> np.ndarray:
    """(rows, 2): predicted / measured TTFT and TPOT of each case with `values` in place."""
    return np.array([_predict(c, values, setup) for c in cases], dtype=float).reshape(-1, 2)


def _loss(ratio: np.ndarray, setup: FitSetup) -> float:
    err = np.abs(np.log(ratio))
    err = err[np.isfinite(err)]  # a one-token row's TPOT is not judged
    if setup.loss == "within":
        # smooth share of rows outside the target bands (a logistic step 0.03 wide in log
        # error): what a median-error target counts, still differentiable for the search
        band = np.broadcast_to(WITHIN, ratio.shape)[np.isfinite(np.log(ratio))]
        return float(np.mean(1.0 / (1.0 + np.exp(-(err - band) / 0.03))))
    # Cauchy loss on the log error: robust to the rows no model explains
    return float(np.mean(np.log1p((err / setup.scale) ** 2)))


def fit(
    cases: list[Case], start: dict[str, float], setup: FitSetup, maxiter: int
) -> dict[str, float]:
    """Values of setup.params minimising the loss on `cases`, from `start` (Powell, at most
    `maxiter` sweeps; xtol 0.01 in the search variable, ftol 1e-3 of the loss)."""
    try:
        from scipy.optimize import minimize
    except ImportError:
        raise ConfigError(
            "fitting needs scipy: pip install 'pdplan[calibrate]' (or pip install scipy)"
        ) from None
    names = setup.params

    def objective(x: np.ndarray) -> float:
        return _loss(ratios(cases, to_params(x, names), setup), setup)

    res = minimize(
        objective,
        from_params(start, names),
        method="Powell",
        options={"maxiter": maxiter, "xtol": 1e-2, "ftol": 1e-3},
    )
    return to_params(res.x, names)


def ape_stats(ratio: np.ndarray) -> dict[str, dict[str, float | int | None]]:
    """Median and p90 absolute % error of TTFT and TPOT over the rows of `ratio` that have a
    value (a one-token row has no TPOT)."""
    out: dict[str, dict[str, float | int | None]] = {}
    for i, key in enumerate(("ttft", "tpot")):
        ape = np.abs(ratio[:, i] - 1.0) * 100.0  # % of measured
        ape = ape[np.isfinite(ape)]
        n = int(ape.size)
        med = float(np.median(ape)) if n else None
        p90 = float(np.percentile(ape, 90)) if n else None
        out[key] = {"n": n, "median": med, "p90": p90}
    return out


def group_of(cases: list[Case]) -> tuple[str, Callable[[Case], str]] | None:
    """What a held-out check leaves out: each model when the rows cover two or more, else
    each GPU when they cover two or more, else None (nothing to hold out)."""
    keys: tuple[tuple[str, Callable[[Case], str]], ...] = (
        ("model", lambda c: c.row.model_path),
        ("gpu", lambda c: get_gpu(c.row.system).name),
    )
    for name, key in keys:
        if len({key(c) for c in cases}) >= 2:
            return name, key
    return None


def held_out(
    cases: list[Case],
    start: dict[str, float],
    setup: FitSetup,
    maxiter: int,
    key: Callable[[Case], str],
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Group (by `key`) -> ratios of its rows predicted with values fitted, from `start`, on
    the other groups' rows alone: how the fit does on rows it never saw. `progress(group, i,
    n)` is told before each of the n fits."""
    out = {}
    groups = sorted({key(c) for c in cases})
    for i, g in enumerate(groups, 1):
        if progress is not None:
            progress(g, i, len(groups))
        train = [c for c in cases if key(c) != g]
        test = [c for c in cases if key(c) == g]
        out[g] = ratios(test, fit(train, start, setup, maxiter), setup)
    return out


def fit_cases(
    rows: Iterable[MeasuredRow | tuple[int, str]],
    engine: str,
    gpu: str | None,
    setup: FitSetup,
    why: dict[str, list[str]] | None = None,
) -> tuple[list[Case], int]:
    """The aggregated rows of `engine` (and `gpu`) as cases, and how many of the file's rows
    were left out: unreadable (read_measured's (line, reason)), or of that engine but not
    predictable with the starting values (unknown model or GPU, a layout too small). `why`,
    when given, receives reason -> the left-out rows (ids, or 'line N'), as accuracy words it."""
    eng = canonical_engine(engine)
    want = get_gpu(gpu).name if gpu else None
    cases: list[Case] = []
    left: dict[str, list[str]] = {} if why is None else why
    for row in rows:
        if isinstance(row, tuple):
            left.setdefault(f"unreadable row: {row[1]}", []).append(f"line {row[0]}")
            continue
        if row.mode != "agg" or canonical_engine(row.backend) != eng:
            continue
        try:
            if want and get_gpu(row.system).name != want:
                continue
            case = case_of(row)
            _ratio(case, {n: getattr(case.base, n) for n in setup.params}, setup)
        except PdplanError as exc:
            msg = str(exc)  # "does not fit" rows group together, as in plan.accuracy
            reason = msg.split(":")[0] if "does not fit" in msg else msg
            left.setdefault(reason, []).append(
                row.row_id if reason == msg else f"{row.row_id} ({msg})"
            )
            continue
        cases.append(case)
    return cases, sum(len(v) for v in left.values())
