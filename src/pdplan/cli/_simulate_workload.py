"""`pdplan simulate`'s traffic: synthetic 'poisson:' / 'closed:' specs checked key by key, and
trace files with their arrivals (helpers of cli/simulate.py)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pdplan._text import foreign_digits
from pdplan.errors import ConfigError, InputError
from pdplan.sim import Arrivals

from ._common import note, warn

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["draws_at_random", "note_duration_cut", "workload"]

# Keys a synthetic workload spec takes, by kind (aliases: isl = input, osl = output,
# c = concurrency); lengths are pdplan LengthSpecs ('1024', 'uniform:100:2000',
# 'lognormal:800:0.5' = mean 800 tokens, sigma 0.5 of ln(length), ...).
_SPEC_KEYS = {
    "poisson": ("n", "rate", "isl", "osl"),
    "closed": ("n", "c", "think", "isl", "osl"),
}
_ALIASES = {"input": "isl", "output": "osl", "concurrency": "c"}
_SPEC_HELP = (
    "give a trace file, 'poisson:rate=R,n=N,isl=..,osl=..' (open loop) or "
    "'closed:c=C,n=N,isl=..,osl=..[,think=S]' (C clients)"
)
# numeric keys: (whole number?, smallest allowed value, is that bound allowed?, what it counts)
_NUMBERS = {
    "n": (True, 1.0, True, "requests"),
    "c": (True, 1.0, True, "closed-loop clients"),
    "rate": (False, 0.0, False, "requests/s"),
    "think": (False, 0.0, True, "seconds between a client's requests"),
}
# keys with a default, and what the default means (a note names each one used)
_DEFAULTS = {"n": ("1000", "requests"), "isl": ("1024", "input"), "osl": ("256", "output")}
# The trace-reading options as `pdplan simulate` spells them (keys of workload()'s `trace`)
_TRACE_FLAGS = {
    "fmt": "--format",
    "mapping": "--map",
    "skip_bad": "--skip-bad",
    "rate": "--rate",
    "clients": "--clients",
}


def workload(
    spec: str, duration: float | None, trace: dict[str, Any] | None = None, seed: int = 0
) -> Any:
    """(Workload, Arrivals) for a trace FILE (its timestamps replayed, or `trace['rate']`
    Poisson arrivals, or `trace['clients']` closed-loop clients; `trace` also carries the
    reader's fmt / mapping / skip_bad) or a synthetic 'poisson:...' / 'closed:...' spec
    (its lengths drawn with `seed`)."""
    # 0 is a value given (and refused below), not an option left out
    t = {k: v for k, v in (trace or {}).items() if v is not None and v is not False}
    m = re.fullmatch(r"(poisson|closed):(.*)", spec.strip())
    if m is None:
        return _trace_workload(spec, duration, t)
    _refuse_trace_options(t)
    kind = m.group(1)
    kw = _spec_keys(spec, kind, m.group(2))
    if kind == "closed" and duration is not None:
        raise ConfigError(
            "--duration limits open-loop arrivals; a closed loop runs its n requests "
            "(lower n to shorten it)"
        )
    if kind == "poisson" and "rate" not in kw:
        raise InputError(f"workload spec {spec!r}: give rate=R (open-loop requests/s)")
    num = {k: _number(spec, k, v) for k, v in kw.items() if k in _NUMBERS}
    lengths: dict[str, Any] = _lengths(spec, kw)  # synthesize's input= and output=
    _note_defaults(kind, kw)
    import pdplan.workload as wlmod

    n = int(num.get("n", int(_DEFAULTS["n"][0])))
    rate = num.get("rate", 1.0)
    try:  # synthesize's own caps (rate over MAX_RATE, a span past MAX_SPAN_S) name the spec
        wl = wlmod.synthesize(n=n, rate=rate, seed=seed, **lengths)
    except InputError as exc:
        raise InputError(f"workload spec {spec!r}: {exc}") from None
    if kind == "closed":
        conc = int(num.get("c", 1))
        return wl, Arrivals("closed", concurrency=conc, think_s=num.get("think", 0.0))
    return wl, Arrivals("poisson", rate=num["rate"], duration_s=duration)


def draws_at_random(spec: str, arrivals: Arrivals) -> bool:
    """Whether the seed shapes this workload: Poisson arrivals (a 'poisson:' spec, a trace at
    --rate), or a synthetic spec's lengths drawn from a distribution (not N or fixed:N, nor
    uniform:N:N). A trace's own lengths and times are never drawn."""
    from pdplan.workload import parse_length_spec

    if arrivals.mode == "poisson":
        return True
    m = re.fullmatch(r"(poisson|closed):(.*)", spec.strip())
    if m is None:
        return False
    kw = _spec_keys(spec, m.group(1), m.group(2))
    for key in ("isl", "osl"):
        value = kw.get(key, _DEFAULTS[key][0])
        if value.startswith("empirical:"):
            return True
        length = parse_length_spec(value)
        if not (length.kind == "fixed" or (length.kind == "uniform" and length.a == length.b)):
            return True
    return False


def _number(spec: str, key: str, text: str) -> float:
    """The value of numeric key `key`, refused unless finite, in range and (n, c) whole."""
    whole, low, inclusive, what = _NUMBERS[key]
    odd = foreign_digits(text)
    if odd:  # float() reads 'rate=２' as 2
        raise InputError(f"workload spec {spec!r}: {key}={text}: {odd}")
    try:
        v, head = float(text), ""
    except ValueError:
        v, head = math.nan, "bad number "
    ok = math.isfinite(v) and (v >= low if inclusive else v > low)
    if ok and (not whole or v.is_integer()):
        return v
    rule = f"must be {'>=' if inclusive else '>'} {low:g} ({'a whole' if whole else 'a finite'} "
    raise InputError(f"workload spec {spec!r}: {head}{key}={text} {rule}number of {what})")


def _lengths(spec: str, kw: dict[str, str]) -> dict[str, str]:
    """synthesize()'s input / output length specs, each checked here so that its error
    names the key ('empirical:FILE' is read, and checked, by synthesize)."""
    from pdplan.workload import parse_length_spec

    out = {}
    for key in ("isl", "osl"):
        default, what = _DEFAULTS[key]
        value = kw.get(key, default)
        if not value.startswith("empirical:"):
            try:
                parse_length_spec(value)
            except InputError as exc:
                raise InputError(f"workload spec {spec!r}: {key}: {exc}") from None
        out[what] = value
    return out


def _note_defaults(kind: str, kw: dict[str, str]) -> None:
    """One note for a missing n (the request count), one for missing isl / osl."""
    if "n" not in kw:
        note(f"the {kind} spec gives no n: it runs n={_DEFAULTS['n'][0]} requests; give n=N")
    missing = [k for k in ("isl", "osl") if k not in kw]
    if missing:
        used = " and ".join(f"{k}={_DEFAULTS[k][0]} ({_DEFAULTS[k][1]} tokens)" for k in missing)
        note(
            f"the {kind} spec gives no {' or '.join(missing)}: every request gets {used}; "
            "give N, uniform:LO:HI or lognormal:MEAN:SIGMA"
        )


def _refuse_trace_options(t: dict[str, Any]) -> None:
    """A synthetic spec would ignore the trace-file options: name the ones given."""
    if not t:
        return
    flags = [_TRACE_FLAGS.get(k, "--" + k.replace("_", "-")) for k in t]
    verb = "applies" if len(flags) == 1 else "apply"
    raise ConfigError(
        f"{', '.join(flags)} {verb} only to a trace file; a synthetic spec takes its own keys "
        "('poisson:rate=R,n=N,isl=..,osl=..' or 'closed:c=C,n=N,isl=..,osl=..')"
    )


def _spec_keys(spec: str, kind: str, body: str) -> dict[str, str]:
    """KEY=VALUE parts of a synthetic spec, aliases resolved; unknown, misplaced or
    repeated keys are errors (a key the kind does not use would be silently ignored)."""
    parts = [p.strip() for p in body.split(",") if p.strip()]
    bare = [p for p in parts if "=" not in p]
    if bare:
        raise InputError(f"workload spec {spec!r}: {', '.join(bare)} is not KEY=VALUE")
    kw: dict[str, str] = {}
    for part in parts:
        key, value = (x.strip() for x in part.split("=", 1))
        name = _ALIASES.get(key.lower(), key.lower())
        if name not in _SPEC_KEYS[kind]:
            other = "closed" if kind == "poisson" else "poisson"
            what = f"{other}-only key" if name in _SPEC_KEYS[other] else "unknown key"
            raise InputError(
                f"workload spec {spec!r}: {what} {key!r} ({kind} takes "
                f"{', '.join(_SPEC_KEYS[kind])})"
            )
        if name in kw:
            raise InputError(f"workload spec {spec!r}: {name} given twice")
        kw[name] = value
    return kw


def _trace_workload(spec: str, duration: float | None, t: dict[str, Any]) -> Any:
    """A trace file with its arrivals: timestamps, --rate (Poisson) or --clients (closed)."""
    import pdplan.workload as wlmod

    if not Path(spec).exists() and not spec.startswith(("http://", "https://")):
        kind = re.fullmatch(r"([A-Za-z_]+):.*", spec.strip())
        what = f"unknown synthetic workload kind {kind.group(1)!r}" if kind else "no such file"
        raise InputError(f"{what}: {_SPEC_HELP}", path=spec)
    rate, clients = t.pop("rate", None), t.pop("clients", None)
    if rate is not None and clients is not None:
        raise ConfigError("give --rate (open loop) or --clients (closed loop), not both")
    if rate is not None and not (rate > 0 and math.isfinite(rate)):
        raise ConfigError(f"--rate={rate:g} must be > 0 requests/s (a finite number)")
    if clients is not None and duration is not None:
        raise ConfigError("--duration limits open-loop arrivals; with --clients all requests run")
    wl = wlmod.read_workload(
        spec, fmt=t.get("fmt"), mapping=t.get("mapping"), skip_bad=bool(t.get("skip_bad"))
    )
    _note_skipped(wl.meta, spec)
    warned = cast("Iterable[str]", wl.meta.get("warnings") or ())  # the readers' list[str]
    for text in warned:  # out-of-order timestamps, blocks, clipping
        warn(f"{spec}: {text}")
    if clients is not None:
        return wl, Arrivals("closed", concurrency=int(clients))
    if rate is not None:
        return wl, Arrivals("poisson", rate=float(rate), duration_s=duration)
    if not wl.has_times:
        left_out = wl.meta.get("time_column_left_out")
        why = (
            f"--map gives no time=, so its timestamp column {left_out!r} is not read: add "
            f"time={left_out} to --map to replay its arrivals, or give"
            if left_out
            else "the trace has no timestamps: give"
        )
        raise InputError(
            f"{why} --rate R (Poisson arrivals at R requests/s) or --clients C (C closed-loop "
            "clients) to replay its lengths",
            path=spec,
        )
    # the unit came from the file's columns (a preset) unless --format or --map time_unit= set it
    pairs = wlmod.parse_mapping(t.get("mapping")) or {}
    _note_replay(wl, spec, t.get("fmt") is None and "time_unit" not in pairs, duration)
    return wl, Arrivals("trace", duration_s=duration)


def _note_replay(wl: Any, spec: str, detected: bool, duration: float | None = None) -> None:
    """Replaying a trace's timestamps: say the span and rate they give, and the unit they were
    read in when it is not seconds (a seconds column read as ms runs 1,000x fast); when the
    unit was `detected` from the columns, how to read them as seconds (not when --map gave
    time_unit=ms: 'from its columns' was wrong there, its '--map time_unit=s' no map). With
    --duration, of the requests it keeps: the whole trace's count and span would claim a
    run the cut never makes (8,819 requests over 3436 s for a 300 s slice)."""
    t = wl.arrival_s
    if t is None or len(t) < 2:
        return
    whole = len(t)
    what = f"{spec}: {whole:,} requests"
    if duration is not None:  # arrivals start at 0 s (the reader subtracts the first)
        t = t[t < duration]
        if len(t) < whole:
            what = f"the first {duration:g} s of {spec}: {len(t):,} of its {whole:,} requests"
    unit = wl.meta.get("time_unit", "s")
    how = f"; timestamps read in {unit}" if unit != "s" else ""
    if unit != "s" and detected:
        name = wl.meta.get("format")
        how += f" (format {name}, from its columns; if seconds: --format {name} --map time_unit=s)"
    span = float(t[-1] - t[0]) if len(t) else 0.0
    rate = f", {(len(t) - 1) / span:.3g} req/s" if span > 0 else ""
    note(f"replaying {what} over {span:.4g} s{rate}{how}")


def _note_skipped(meta: dict[str, Any], spec: str) -> None:
    """With --skip-bad: say how many malformed rows the reader left out, and the first."""
    n = int(meta.get("skipped_total") or 0)
    if not n:
        return
    first = (meta.get("skipped_examples") or ["?"])[0]
    rows = "row" if n == 1 else "rows"
    note(f"skipped {n:,} malformed {rows} of {spec} (first: {first})")


def note_duration_cut(arrivals: Arrivals, ran: int, total: int) -> None:
    """Poisson arrivals (a 'poisson:' spec, or a trace at --rate) cut by --duration: say how
    many of the requests ran (a trace's replay says it before the run; these arrivals are
    drawn by the simulator, so only the run knows), e.g. 978 of n=4000."""
    if arrivals.mode == "poisson" and arrivals.duration_s is not None and ran < total:
        note(
            f"--duration {arrivals.duration_s:g} s keeps the {ran:,} of the workload's "
            f"{total:,} requests that arrive before it"
        )
