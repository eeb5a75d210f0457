"""Shared CLI helpers: JSON vs rich output, catalog lookups with clear errors."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from pdplan.errors import ConfigError

__all__ = [
    "console",
    "context_warning",
    "emit",
    "err_console",
    "kv_dtype_arg",
    "kv_table",
    "lengths_context_warning",
    "note",
    "num",
    "refuse_empty",
    "refuse_ignored",
    "to_jsonable",
    "warn",
]

# Piped or captured output has no terminal width (rich then assumes 80 columns and cuts
# numbers in wide tables to '671.…'): print such output up to 160 columns wide.
# No console markup or emoji codes: every table cell and message may carry user text (file,
# model and GPU names, specs), which must print as given ('[/red]gpu' crashed rich's markup
# parser; 'lognormal:100:0.5' became an emoji). Styles are set with style=, not markup.
console = Console(width=None if sys.stdout.isatty() else 160, markup=False, emoji=False)
err_console = Console(stderr=True, soft_wrap=True, markup=False, emoji=False)


# --mem-fraction (simulate, estimate): the engine's KV-sizing flag, as each engine reads it
MEM_FRACTION_HELP = (
    "the engine's KV-cache memory fraction: of the device for vllm (--gpu-memory-utilization, "
    "default 0.9) and sglang (--mem-fraction-static, default its own rule: ~0.82 on H100, "
    "0.85 on B200), of what the weights leave free for trtllm "
    "(kv_cache_free_gpu_memory_fraction, default 0.9)"
)


def num(x: float) -> str:
    """A value for a table: whole with thousands separators from 100 up, else 3 significant
    digits (0.32, 1.5, 4.2e-05), so a small non-zero value never prints as 0."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def warn(message: str) -> None:
    """One 'warning: ...' line on stderr (JSON on stdout stays clean)."""
    err_console.print(f"warning: {message}", markup=False, highlight=False)


def note(message: str) -> None:
    """One 'note: ...' line on stderr: a default the command chose for the user."""
    err_console.print(f"note: {message}", markup=False, highlight=False)


def shape_warning(spec: Any) -> list[str]:
    """Warn that a model was read by its name's family and size (catalog.models
    guessed_shape); the text, for --json's warnings, or []."""
    from pdplan.catalog.models import guessed_shape

    text = guessed_shape(spec)
    if text:
        warn(text)
    return [text] if text else []


def context_warning(model: Any, tokens: int, what: str, count: int = 1) -> str | None:
    """Warn when `what` (count of them) runs past the model's context window
    (max_position_embeddings): engines refuse such requests (vLLM max_model_len defaults to
    it) unless the model is served with longer RoPE scaling (YaRN), so results assume that.
    Returns the warning (for a command's JSON `warnings`), or None."""
    limit = int(getattr(model, "max_position_embeddings", 0) or 0)
    if not (limit and tokens > limit):
        return None
    head = (
        f"{count:,} {what} (up to {tokens:,} tokens) exceed"
        if count > 1
        else f"{what} of {tokens:,} tokens exceeds"
    )
    msg = (
        f"{head} {model.name}'s {limit:,}-token context: engines refuse such requests "
        "unless the model is served with longer RoPE scaling (YaRN); computed as if it were"
    )
    warn(msg)
    return msg


def lengths_context_warning(spec: Any, isl: float, osl: float, lens: Any) -> list[str]:
    """context_warning for the request (ISL + OSL), or for every request of a distribution
    `lens` (plan.ratio_lengths.Lengths: prompt + a trace's own output length, else + OSL);
    the warning given, as a list for a command's JSON `warnings`."""
    if lens is None:
        said = context_warning(spec, int(isl + osl), "a request")
        return [said] if said else []
    limit = int(getattr(spec, "max_position_embeddings", 0) or 0)
    totals = lens.lengths + (osl if lens.outputs is None else lens.outputs)
    over = totals > limit
    if not (limit and over.any()):
        return []
    n = round(float(over.sum() if lens.counts is None else lens.counts[over].sum()))
    tokens = int(totals[over].max())
    said = context_warning(spec, tokens, "requests" if n > 1 else "a request", max(n, 1))
    return [said] if said else []


# What to give instead of an empty value, by flag (refuse_empty)
EMPTY_HINTS: dict[str, str] = {
    "--spec-decode": "METHOD:K[:ACCEPTANCE], e.g. mtp:3, or none (no speculative decoding)",
    "--kv-dtype": "a KV cache dtype (bf16, fp8, ...), or leave it out for the checkpoint's",
    "--weight-dtype": "a weight dtype (bf16, fp8, fp4, ...), or leave it out for the checkpoint's",
    "--rates": "QPS values like 0.5,1,10, or leave it out for the default sweep",
    "--model": "a model name or config.json, or leave it out for the default",
    "--gpu": "a GPU name, or leave it out for the default",
    "--engine": "vllm, sglang or trtllm, or leave it out for the default",
    "--layout": "a layout such as tp4 or tp8-ep8, or leave it out for the default",
    "--prefill-layout": "a layout such as tp4 or tp8-ep8, or leave it out for the default",
    "--decode-layout": "a layout such as tp4 or tp8-ep8, or leave it out for the default",
    "--workload": "a trace file or a spec such as poisson:rate=2,n=100",
    "--measured": "the path of a CSV in measured_serving.csv format",
    "FILE": "a trace file (or a metrics URL)",
    "SRC": "a trace file",
    "DST": "a file name (.jsonl, .csv, .parquet; .jsonl.gz / .csv.gz)",
    # an empty output name wrote nothing and exited 0
    "--out": "a file name",
    "--rows": "a file name, or leave it out to write none",
    "--plot": "a file name, or leave it out to draw none",
    "--requests-out": "a file name, or leave it out to write none",
    "--timeline-out": "a file name, or leave it out to write none",
    "--chrome-trace": "a file name, or leave it out to write none",
}


def refuse_empty(options: dict[str, str | None]) -> None:
    """Refuse a string option given as '' or blanks: the `value or default` fallbacks would
    read it as the option left out (`--spec-decode ''` as none). The error says what to give
    (EMPTY_HINTS)."""
    for flag, value in options.items():
        if value is not None and not value.strip():
            raise ConfigError(f"{flag} {value!r} is empty: give {EMPTY_HINTS[flag]}")


def kv_dtype_arg(value: str | None) -> str | None:
    """--kv-dtype as given to an engine: 'auto' (vLLM / SGLang's default: the checkpoint's
    dtype) is the option left out, and an engine's spelling (fp8_e4m3, fp8_e5m2, bfloat16,
    nvfp4) is the catalog's name for it. '' stays '' for refuse_empty to refuse; an unknown
    name is refused later (catalog kv_dtype_bytes lists the KV dtypes)."""
    from pdplan.catalog.model_parts import canonical_kv_dtype

    if value is None or not value.strip():
        return value
    key = canonical_kv_dtype(value)
    return None if key == "auto" else key


def refuse_ignored(options: dict[str, Any], when: str) -> None:
    """Refuse, in one line, the options given (not None) that apply only `when`: a run that
    would ignore them says so instead (the project's rule)."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        it = "it" if len(given) == 1 else "them"
        raise ConfigError(
            f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'} {when}: drop {it}"
        )


def to_jsonable(obj: Any) -> Any:
    """Convert dataclasses / numpy scalars / tuples into plain JSON values (NaN -> None)."""
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: to_jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):  # a named tuple (BatchShape)
        return {k: to_jsonable(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def emit(data: dict[str, Any], as_json: bool, render: Callable[[Console], None]) -> None:
    """Print `data` as JSON (stable keys) when as_json, else call render(console)."""
    if as_json:
        print(json.dumps(to_jsonable(data), indent=2, sort_keys=False))
    else:
        render(console)


def kv_table(title: str, rows: list[tuple[str, Any]]) -> Table:
    """A two-column name/value table."""
    t = Table(title=title, show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    for k, v in rows:
        t.add_row(k, str(v))
    return t
