"""Reader for measured serving rows (AIConfigurator silicon format), one benchmark per row."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pdplan.catalog.gpus import get_gpu
from pdplan.errors import ConfigError, InputError
from pdplan.parallel.layout import Layout
from pdplan.perf.efficiency import canonical_engine
from pdplan.perf.quant_modes import quant_to_dtype
from pdplan.perf.spec_decode import parse_spec

__all__ = ["MeasuredRow", "quant_to_dtype", "read_measured"]

REQUIRED = (
    "backend",
    "model_path",
    "system",
    "mode",
    "isl",
    "osl",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
)


@dataclass(frozen=True)
class MeasuredRow:
    """One measured benchmark: setup and the measured TTFT / TPOT (ms)."""

    line: int
    row_id: str
    backend: str
    version: str
    model_path: str
    system: str
    mode: str  # "agg" | "disagg"
    isl: int
    osl: int
    weight_dtype: str | None
    moe_dtype: str | None
    concurrency: int | None  # closed-loop clients of one instance (see _concurrency)
    layout: Layout | None  # agg
    prefill_layout: Layout | None
    decode_layout: Layout | None
    prefill_workers: int  # 0 = not given in the file
    decode_workers: int
    prefill_batch: int | None
    decode_batch: int | None
    ttft_ms: float
    tpot_ms: float  # NaN for a one-token output (OSL 1): no inter-token time exists
    source: str = ""  # silicon_data_source: where and how the row was measured (free text)
    # speculative decoding the row ran with, 'METHOD:K[:ACCEPTANCE]' or 'none' (optional
    # column spec_decode, checked by perf.spec_decode.parse_spec); '' = not recorded
    spec_decode: str = ""


def _int(row: dict[str, str], key: str, default: int | None = None) -> int | None:
    v = (row.get(key) or "").strip()
    if not v:
        return default
    try:
        f = float(v)
    except ValueError:
        raise ValueError(f"{key}={v!r} is not a number") from None
    if not math.isfinite(f) or f < 0 or f != int(f):
        raise ValueError(f"{key}={v!r} is not a non-negative integer")
    return int(f)


def _layout(row: dict[str, str], prefix: str) -> Layout | None:
    tp = _int(row, prefix + "tp_size")
    if not tp:
        return None
    dp = _int(row, prefix + "attention_dp_size") or 1
    pp = _int(row, prefix + "pp_size") or 1
    ep = _int(row, prefix + "moe_ep_size") or 1
    etp: int | None  # None: the GPUs do not split into ep groups (then width)
    etp = _int(row, prefix + "moe_tp_size") or 0
    width = tp * dp
    if etp * ep != width:  # 0 / blank / inconsistent: experts spread over the same GPUs
        etp = width // ep if width % ep == 0 else None
        if etp is None:
            ep, etp = 1, width
    return _unfold(Layout(tp=tp, dp=dp, pp=pp, ep=ep, moe_tp=etp), row.get("system") or "")


def _unfold(lay: Layout, system: str) -> Layout:
    """Undo the product encoding some AIConfigurator db-dump rows use for one-node MoE runs.

    Those rows write TP x EP (or DP x EP) as the attention width and the launch's TP as moe_tp:
    a TP4 EP4 SGLang run reads tp_size 16, moe_tp 4, moe_ep 4 (its copy in 2026-04-06.csv
    names itself "..._tp4_ep4_..." with the same TTFT/TPOT); a TensorRT-LLM DP-attention run
    with TP=8 EP=8 reads attention_dp 64; a vLLM DP4 EP run reads tp 4, dp 4, moe_ep 16. A
    width wider than the GPU's scale-up domain (8 on HGX B200/B300/H100) is not a one-node
    launch, so when the counts factor this way the layout is read as the launch meant it:
    width = moe_tp (or tp = dp), experts over EP on those GPUs. Reading the 285 such rows of
    measured_serving.csv this way takes their simulated TPOT median error from 22 % to 13 %.
    Widths inside the domain, and GPUs not in the catalog, are kept as written."""
    try:
        domain = get_gpu(system).scaleup_domain
    except ConfigError:
        return lay
    etp, ep, width = lay.moe_tp or 1, lay.ep, lay.tp * lay.dp
    if width <= domain or ep <= 1:
        return lay
    if etp > 1 and etp * ep == width and etp % ep == 0 and etp <= domain:
        if lay.dp == 1:  # tp = TP x EP
            return Layout(tp=etp, pp=lay.pp, ep=ep, moe_tp=etp // ep)
        if lay.tp == 1:  # dp = DP x EP
            return Layout(dp=etp, pp=lay.pp, ep=ep, moe_tp=etp // ep)
    if etp == 1 and lay.tp == lay.dp and ep == width and lay.dp <= domain:  # tp = dp = DP
        return Layout(dp=lay.dp, pp=lay.pp, ep=lay.dp, moe_tp=1)
    return lay


def _concurrency(row: dict[str, str]) -> int | None:
    """Closed-loop clients of ONE instance.

    Agg rows: batch_size is the clients per attention-DP rank, so one instance serves
    batch_size x attention_dp_size; `silicon_concurrency=N` in the source note is the
    benchmark's total over the whole deployment, which for 184 rows spans several replicas
    (N = batch x dp x replicas, e.g. 32 TP2 replicas of Qwen3-32B on a GB200 rack). Disagg
    rows: the total clients (silicon_concurrency), else decode_batch_size x workers.
    """
    m = re.search(r"silicon_concurrency=(\d+)", row.get("silicon_data_source") or "")
    total = int(m.group(1)) if m else None
    if (row.get("mode") or "").strip() == "agg":
        b = _int(row, "batch_size")
        clients = b * (_int(row, "attention_dp_size") or 1) if b else total
    elif total:
        clients = total
    else:
        db = _int(row, "decode_batch_size")
        clients = db * (_int(row, "decode_num_workers", 1) or 1) if db else None
    if clients is not None and clients > MAX_CLIENTS:
        raise ValueError(f"{clients:,} concurrent clients is past {MAX_CLIENTS:,}: {_CLIENTS_WHY}")
    return clients


# Most closed-loop clients a row may name, in all: the file's largest is 8,192 (batch_size x
# attention DP); a million concurrent streams is past any benchmark client's connection pool
# (vLLM's benchmark_serving.py opens one aiohttp stream per client), so a larger figure is a
# unit or parsing error (e.g. a token count in batch_size), not a setup to simulate.
MAX_CLIENTS = 1_000_000
_CLIENTS_WHY = "a batch size or client count this large is a unit or parsing error"


def _weight_dtype(row: dict[str, str]) -> str | None:
    """gemm_quant_mode's dtype; a row that names none still says its precision ("fp4",
    "bf16"), read as a quant mode (blank or "mixed", a checkpoint's own mix of dtypes: the
    model's default). Any other precision no quant mode answers to is a ValueError: read at
    the model's default, the row would price another setup than the one measured."""
    if (row.get("gemm_quant_mode") or "").strip():
        return quant_to_dtype(row["gemm_quant_mode"])
    precision = (row.get("precision") or "").strip()
    if precision.lower() == "mixed":
        return None
    try:
        return quant_to_dtype(precision)
    except InputError as exc:
        raise ValueError(f"precision: {exc}") from None


def _engine(name: str) -> str:
    """The engine a row names, canonical ('dynamo-trt' -> trtllm, 'ATOM' -> vllm); a name no
    engine answers to is kept, so predicting the row reports it as unknown."""
    try:
        return canonical_engine(name)
    except ConfigError:
        return name.strip().lower()


# Largest latency a measured row may report, ms: 1e7 ms (2.8 hours) is past any benchmark's
# timeout (the file's slowest TTFT is ~59 s); a larger value is a unit or parsing error.
MAX_LATENCY_MS = 1e7


def _ms(row: dict[str, str], key: str) -> float:
    """A latency column in ms: a positive finite number up to MAX_LATENCY_MS, else a
    ValueError naming the column and value."""
    v = (row.get(key) or "").strip()
    try:
        f = float(v)
    except ValueError:
        raise ValueError(f"{key}={v!r} is not a number") from None
    if not (math.isfinite(f) and 0 < f <= MAX_LATENCY_MS):
        raise ValueError(f"{key}={v!r} must be a positive number of ms up to {MAX_LATENCY_MS:g}")
    return f


def _tpot(row: dict[str, str], osl: int) -> float:
    """silicon_tpot_ms; with one output token (OSL 1, a prefill-only benchmark) there is no
    inter-token time, benchmark clients report none (vLLM's benchmark_serving.py: 0), so an
    empty / 0 / any value reads as NaN and the row is judged on TTFT only."""
    if osl == 1:
        return math.nan
    return _ms(row, "silicon_tpot_ms")


def _text(row: dict[str, str], key: str) -> str:
    """A required text column, stripped; blank: a ValueError naming it (read on, a blank
    model_path was looked up as a config.json folder '' and a blank system as GPU '')."""
    if not (v := (row.get(key) or "").strip()):
        raise ValueError(f"{key} is empty")
    return v


def _parse(row: dict[str, str], line: int) -> MeasuredRow:
    ttft = _ms(row, "silicon_ttft_ms")
    mode = row["mode"].strip().lower()
    mode = {"aggregated": "agg", "disaggregated": "disagg", "pd": "disagg"}.get(mode, mode)
    if mode not in ("agg", "disagg"):
        raise ValueError(f"mode {row['mode']!r} is not agg or disagg")
    isl, osl = _int(row, "isl"), _int(row, "osl")
    if not isl or not osl:
        raise ValueError(f"isl={isl} and osl={osl}: both must be positive integers")
    tpot = _tpot(row, osl)
    return MeasuredRow(
        line=line,
        row_id=row.get("id", "") or f"line{line}",
        backend=_engine(_text(row, "backend")),
        version=(row.get("backend_version") or "").strip(),
        model_path=_text(row, "model_path"),
        system=_text(row, "system"),
        mode=mode,
        isl=isl,
        osl=osl,
        weight_dtype=_weight_dtype(row),
        moe_dtype=quant_to_dtype(row.get("moe_quant_mode") or ""),
        concurrency=_concurrency(row),
        layout=_layout(row, "") if mode == "agg" else None,
        prefill_layout=_layout(row, "prefill_") if mode == "disagg" else None,
        decode_layout=_layout(row, "decode_") if mode == "disagg" else None,
        prefill_workers=_int(row, "prefill_num_workers", 0) or 0,
        decode_workers=_int(row, "decode_num_workers", 0) or 0,
        prefill_batch=_int(row, "prefill_batch_size"),
        decode_batch=_int(row, "decode_batch_size"),
        ttft_ms=ttft,
        tpot_ms=tpot,
        source=(row.get("silicon_data_source") or "").strip(),
        spec_decode=_spec_decode(row),
    )


def _spec_decode(row: dict[str, str]) -> str:
    text = (row.get("spec_decode") or "").strip().lower()
    try:
        parse_spec(text)  # checked here, so a bad value names its line
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return text


def _header_hint(names: list[str]) -> str:
    """Why a header lacks the required columns when it is another delimiter's (a ';' or tab
    separated export reads as one long column name), else ''."""
    if len(names) == 1:
        for sep, said in ((";", "semicolons"), ("\t", "tabs")):
            if sep in names[0]:
                return f" (the header is separated by {said}; this reader takes commas)"
    return ""


def read_measured(path: str | Path) -> Iterator[MeasuredRow | tuple[int, str]]:
    """Yield a MeasuredRow per data line, or (line, reason) for a row that cannot be read.

    A missing file, a missing required column or an empty file raises InputError.
    """
    p = Path(path)
    try:
        fh = p.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=str(p)) from None
    with fh:
        reader = csv.DictReader(fh)
        # names as written around the commas (" isl" from "id, isl, osl") are the columns
        reader.fieldnames = [n.strip() for n in reader.fieldnames or []]
        missing = [c for c in REQUIRED if c not in reader.fieldnames]
        if missing:
            why = _header_hint(reader.fieldnames)
            raise InputError(f"missing column(s): {', '.join(missing)}{why}", path=str(p), line=1)
        # a repeated header name: DictReader keeps one value per name, so every row came out
        # one field short ("expected 35 comma-separated fields, got 34") and which copy would
        # be read is a guess: name the column instead
        names = list(reader.fieldnames or [])
        repeated = sorted({c for c in names if names.count(c) > 1})
        if repeated:
            raise InputError(
                f"column(s) named more than once in the header: {', '.join(repeated)}",
                path=str(p),
                line=1,
            )
        n_fields = len(names)
        for i, row in enumerate(reader, start=2):
            got = sum(v is not None for k, v in row.items() if k is not None)
            got += len(row.get(None) or ())  # type: ignore[call-overload]
            if got != n_fields:  # DictReader fills a short row with None, keeps extras under None
                yield (i, f"expected {n_fields} comma-separated fields, got {got}")
                continue
            try:
                yield _parse(row, i)
            except (ValueError, KeyError, TypeError, InputError) as exc:
                yield (i, str(exc))
