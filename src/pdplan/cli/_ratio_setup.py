"""`pdplan ratio` set-up: its length and TPOT options, the layouts and their cost models."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from pdplan._text import foreign_digits
from pdplan.cli._common import warn
from pdplan.errors import ConfigError
from pdplan.perf.efficiency import vendor_caveat
from pdplan.plan.layout_pick import KV_BATCH_CAP, KVNeed, KVSizing

__all__ = ["MAX_TPOT_S", "check_tpot", "instances", "lengths_and_means", "parse_rates"]

# Largest --tpot taken as seconds, s: no served LLM streams slower than one token per 10 s
# (published TPOT targets are 10-200 ms), so a larger value is read as milliseconds by mistake.
MAX_TPOT_S = 10.0
# Longest mean --isl / --osl, tokens: int32, the workload's length limit (workload.values
# INT32_MAX, not imported: `pdplan ratio` does not load the trace stack)
INT32_MAX = 2**31 - 1


def _layout(
    opts: dict[str, Any], key: str, spec: Any, gpu: Any, picked: list[str], need: KVNeed
) -> Any:
    """The --prefill-layout / --decode-layout given (valid, and holding the weights and KV for
    one prompt (ISL) or request (ISL + OSL): plan.layout_fit.require_fit, as estimate asks),
    else the default holding `need`'s KV room (plan.layout_pick.default_layout)."""
    from pdplan.perf.spec_decode import parse_spec
    from pdplan.plan.layout_fit import require_fit
    from pdplan.plan.layout_pick import default_layout
    from pdplan.plan.steady import valid_layout

    if not opts[key]:
        drafts = 0  # a decode instance that drafts (--spec-decode) also holds the draft head
        sd = parse_spec(opts.get("spec_decode") or "")  # None for 'none' / 'off'
        if key == "decode_layout" and sd is not None:
            drafts = sd.draft_layers
        return default_layout(spec, gpu, opts["kv_dtype"], picked, need=need, draft_layers=drafts,
                              engine=opts["engine"],
                              mem_fraction=opts.get("mem_fraction"))  # fmt: skip
    lay = valid_layout(spec, gpu, opts[key])
    option = "--" + key.replace("_", "-")
    require_fit(spec, gpu, lay, option, kv_dtype=opts["kv_dtype"], tokens=need.tokens,
                what=need.what(), sizing=_sizing(opts))  # fmt: skip
    return lay


def _sizing(opts: dict[str, Any]) -> KVSizing:
    """How the instances size their KV pools: the engine's default or --mem-fraction."""
    return KVSizing(opts["engine"], opts.get("mem_fraction"))


def instances(
    opts: dict[str, Any], spec: Any, gpu: Any, picked: list[str], said: list[str]
) -> tuple:
    """(prefill layout, decode layout, their cost models, the decode MemoryPlan); a
    default layout's why goes to `picked`, the layouts' warnings to stderr and to `said`."""
    from pdplan.perf.costmodel import CostModel
    from pdplan.perf.memory import engine_kv_memory, plan_memory
    from pdplan.perf.spec_decode import SpecCostModel, parse_spec
    from pdplan.plan.steady import layout_warnings

    kvd, isl = opts["kv_dtype"], round(opts["isl"])
    tokens = round(opts["isl"] + opts["osl"])  # a decoding request's KV at its last token
    lp = _layout(opts, "prefill_layout", spec, gpu, picked, KVNeed(isl, 1, "prefill"))
    ld = _layout(opts, "decode_layout", spec, gpu, picked, KVNeed(tokens, KV_BATCH_CAP))
    for w in layout_warnings(spec, gpu, [(lp, isl), (ld, tokens)]):
        warn(w)  # e.g. TP wider than the scale-up domain, as `pdplan parallel` warns
        said.append(w)
    caveat = vendor_caveat(
        gpu.name, gpu.vendor, gpu.fp16_only
    )  # efficiencies fitted on NVIDIA runs
    if caveat:
        warn(caveat)
        said.append(caveat)
    cm_p = CostModel(spec, gpu, lp, engine=opts["engine"], kv_dtype=kvd)
    sd = parse_spec(opts["spec_decode"] or "")  # decode instances may draft (MTP / EAGLE)
    cm_d = CostModel(spec, gpu, ld, opts["engine"], None, kvd) if sd is None else SpecCostModel(
        spec, gpu, ld, opts["engine"], None, kvd, spec=sd)  # fmt: skip
    drafts = 0 if sd is None else sd.draft_layers  # the draft head's weights and KV layer
    frac, of_free = engine_kv_memory(
        opts["engine"], gpu, ld, chunk_tokens=cm_d.eff.prefill_chunk, speculative=sd is not None
    )  # the engine's own KV sizing, or its flag as --mem-fraction sets it
    frac = frac if opts.get("mem_fraction") is None else opts["mem_fraction"]
    mem = plan_memory(spec, gpu, ld, kv_dtype=kvd, draft_layers=drafts, mem_fraction=frac,
                      of_free=of_free)  # fmt: skip
    return lp, ld, cm_p, cm_d, mem


def lengths_and_means(
    path: Path | None, isl_dist: str | None, isl: float | None, osl: float | None
) -> tuple[Any, float | None, float | None]:
    """(--lengths / --isl-dist distribution or None, ISL, OSL): a distribution sets the ISL
    (its mean) and, from a trace, the OSL unless --osl is given (then its outputs are not used)."""
    from pdplan.plan.ratio_lengths import lengths_option

    _check_means(isl=isl, osl=osl)
    lens = lengths_option(path, isl_dist, isl)
    if lens is None:
        return None, isl, osl
    if osl is not None and lens.output_mean is not None:  # said, not done silently
        said = f"; --osl {osl:g} replaces its output lengths (mean {lens.output_mean:.4g})"
        lens = replace(lens, outputs=None, reading=(lens.reading or "") + said)
    return lens, lens.mean, osl if osl is not None else lens.output_mean


def parse_rates(text: str | None) -> list[float] | None:
    """--rates '0.5,1,10' as QPS values (None when not given), each finite and > 0."""
    if not text:
        return None
    odd = foreign_digits(text)
    if odd:  # float() reads '２' as 2
        raise ConfigError(f"--rates {text!r}: {odd}")
    parts = [x.strip() for x in text.replace(";", ",").split(",")]
    try:
        if "" in parts:  # '1,,2' or a trailing comma: a value left out
            raise ValueError
        rates = [float(x) for x in parts]
    except ValueError:
        raise ConfigError(f"--rates {text!r}: expected numbers like 0.5,1,10") from None
    bad = [x for x in parts if not (float(x) > 0 and math.isfinite(float(x)))]
    if bad:  # named here, with the option: the sweep's own check says only "rate 0.0"
        said = "is no positive rate" if len(bad) == 1 else "are no positive rates"
        raise ConfigError(f"--rates {text!r}: {', '.join(bad)} {said} (QPS > 0)")
    return rates


def _check_means(**means: float | None) -> None:
    """Refuse a mean --isl / --osl that is not finite or past int32 tokens (the workload's
    length limit): NaN and inf crashed the context check (int(nan)), 1e300 printed a
    300-digit request length before its 'does not fit'."""
    for name, v in means.items():
        if v is None or (v > 0 and v <= INT32_MAX):
            continue
        if not math.isfinite(v):
            raise ConfigError(f"--{name}={v} must be a finite number of tokens")
        if v > INT32_MAX:
            raise ConfigError(f"--{name}={v:g} is over {INT32_MAX:,} tokens")


def check_tpot(tpot: float) -> None:
    """Refuse a TPOT that is not a positive number of seconds, or one given in milliseconds."""
    if not tpot > 0:
        raise ConfigError(f"--tpot={tpot} must be a positive number of seconds")
    if math.isinf(tpot):  # 'did you mean inf?' below said nothing
        raise ConfigError(f"--tpot={tpot} must be a finite number of seconds")
    if tpot > MAX_TPOT_S:
        raise ConfigError(
            f"--tpot is in seconds: did you mean {tpot / 1e3:g}? ({tpot:g} s per output token "
            f"is past the {MAX_TPOT_S:g} s any served model streams at)"
        )
