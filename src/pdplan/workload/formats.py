"""Trace formats as column maps (Mooncake, Azure, BurstGPT, ...) and format detection."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace

from pdplan.errors import InputError
from pdplan.workload import _sniff
from pdplan.workload.files import is_gzip, open_binary, open_text, read_head
from pdplan.workload.values import TIME_UNITS

__all__ = [
    "CONTAINERS",
    "PRESETS",
    "ColumnMap",
    "detect",
    "is_gzip",
    "looks_like_prometheus",
    "open_binary",
    "open_text",
    "parse_mapping",
    "time_column_left_out",
]

CONTAINERS = ("csv", "jsonl", "parquet")


@dataclass(frozen=True)
class ColumnMap:
    """Which column holds what. Optional columns are used when the file has them."""

    input: str
    output: str
    time: str | None = None
    time_unit: str = "s"  # unit of a numeric time column: s, ms, us, ns
    hashes: str | None = None
    session: str | None = None
    count_cols: tuple[str, ...] = ()  # categorical columns tallied into meta (by_<col>)
    block_tokens: int = 512  # tokens per hash block (Mooncake FAST'25: 512)

    @property
    def unit_s(self) -> float:
        return TIME_UNITS[self.time_unit]

    def present(self, columns: list[str]) -> ColumnMap:
        """This map with optional columns the file lacks set to None."""
        have = set(columns)
        return replace(
            self,
            time=self.time if self.time in have else None,
            hashes=self.hashes if self.hashes in have else None,
            session=self.session if self.session in have else None,
            count_cols=tuple(c for c in self.count_cols if c in have),
        )


# Detection order matters: the first preset whose required columns are present wins.
PRESETS: dict[str, ColumnMap] = {
    # Mooncake FAST'25 JSONL: timestamp (ms), input_length, output_length, hash_ids (512-token
    # blocks). pdplan's own output uses the same names (+ session_id), in JSONL, CSV or Parquet.
    "mooncake": ColumnMap(
        "input_length", "output_length", "timestamp", "ms", "hash_ids", "session_id"
    ),
    # Azure LLM inference trace 2023/2024: TIMESTAMP is an ISO datetime (7 fraction digits in
    # 2023, +00:00 offset in 2024), ContextTokens = prompt, GeneratedTokens = output.
    "azure": ColumnMap("ContextTokens", "GeneratedTokens", "TIMESTAMP"),
    # BurstGPT: Timestamp (s), Model, Request tokens, Response tokens, Total tokens, Log Type;
    # failed requests have 0 response tokens (kept and counted, see workload_stats).
    "burstgpt": ColumnMap(
        "Request tokens", "Response tokens", "Timestamp", count_cols=("Model", "Log Type")
    ),
    # vidur processed traces: arrived_at (s), num_prefill_tokens, num_decode_tokens;
    # without arrived_at (Sarathi ShareGPT stats) it is a pure length distribution.
    "vidur": ColumnMap("num_prefill_tokens", "num_decode_tokens", "arrived_at"),
}

_MAP_KEYS = ("input", "output", "time", "time_unit", "hashes", "session", "block_tokens")


def parse_mapping(text: str | dict[str, str] | None) -> dict[str, str] | None:
    """'input=prompt_len,output=gen_len,time=ts,time_unit=ms' -> dict (keys checked)."""
    if text is None or isinstance(text, dict):
        pairs = dict(text) if text else None
    else:
        pairs = {}
        for item in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = item.partition("=")
            if not sep or not value.strip():
                raise InputError(f"bad --map entry {item!r}: use key=column")
            if key.strip() in pairs:
                raise InputError(f"--map gives {key.strip()} twice: give each key once")
            pairs[key.strip()] = value.strip()
    if pairs is None:
        return None
    unknown = sorted(set(pairs) - set(_MAP_KEYS))
    if unknown:
        raise InputError(f"unknown --map key(s) {unknown}; known: {', '.join(_MAP_KEYS)}")
    if pairs.get("time_unit", "s") not in TIME_UNITS:
        raise InputError(f"time_unit must be one of {sorted(TIME_UNITS)}")
    if "block_tokens" in pairs and not pairs["block_tokens"].isdigit():
        raise InputError("block_tokens must be a positive integer")
    _refuse_shared_columns(pairs)
    return pairs


def _refuse_shared_columns(pairs: dict[str, str]) -> None:
    """One column read as two things (input=len,output=len): no trace has that meaning."""
    seen: dict[str, str] = {}
    for key in ("input", "output", "time", "hashes", "session"):
        col = pairs.get(key)
        if col is None:
            continue
        if col in seen:
            raise InputError(
                f"--map gives column {col!r} to both {seen[col]} and {key}: each needs its own"
            )
        seen[col] = key


def _map_from_pairs(pairs: dict[str, str], columns: list[str], path: str) -> ColumnMap:
    for key in ("input", "output"):
        if key not in pairs:
            raise InputError(f"--map needs {key}=COLUMN", path=path)
    missing = [
        pairs[k]
        for k in ("input", "output", "time", "hashes", "session")
        if k in pairs and pairs[k] not in columns
    ]
    if missing:
        raise InputError(f"column(s) {missing} not in the file; it has {columns[:20]}", path=path)
    return ColumnMap(
        pairs["input"],
        pairs["output"],
        pairs.get("time"),
        pairs.get("time_unit", "s"),
        pairs.get("hashes"),
        pairs.get("session"),
        block_tokens=int(pairs.get("block_tokens", "512") or 512),
    )


# -- detection -----------------------------------------------------------------------------
_PROM_LINE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{[^}]*\})?\s+[-+0-9.eEInfNa]+(\s+\d+)?$")


def looks_like_prometheus(path: str) -> bool:
    """A Prometheus text exposition: '# HELP' / '# TYPE' comments or `name{labels} value`."""
    text = read_head(path).decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first.startswith(("# HELP ", "# TYPE ")) or bool(_PROM_LINE.match(first))


def _columns(path: str, container: str, head: bytes) -> list[str]:
    if container == "parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises several types for a corrupt footer
            raise InputError(f"not a readable Parquet file: {exc}", path=path) from None
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if container == "jsonl":
        return _sniff.jsonl_keys(text)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    try:
        return [c.strip() for c in next(csv.reader([first]), [])]
    except csv.Error:
        return []


def detect(
    path: str, fmt: str | None, mapping: dict[str, str] | None
) -> tuple[str, ColumnMap, str]:
    """-> (container, column map, format name) for a file, from --format/--map or its header."""
    gz = is_gzip(path)
    head = read_head(path)
    if not head.strip():
        raise InputError("empty file", path=path)
    if fmt != "csv" and not head.startswith(_sniff.PARQUET_MAGIC):
        _sniff.refuse_json_array(head, path)
    kind = fmt if fmt in CONTAINERS else _sniff.container(head, gz, path)
    columns = _columns(path, kind, head)
    if kind == "jsonl" and not columns:  # no JSON object in the head: the reader names why
        columns = _named_fields(fmt, mapping) or _sniff.refuse_no_objects(path)
    kind, cmap, name = _pick_map(path, fmt, mapping, kind, columns)
    _refuse_duplicates(cmap, columns, path)
    return kind, cmap, name


def _named_fields(fmt: str | None, mapping: dict[str, str] | None) -> list[str]:
    """The fields a preset (--format) or --map names: a JSONL head without one JSON object
    has no keys to check them against, so they are taken as given and the reader names each
    line that is not such an object (--skip-bad skips it)."""
    named = [
        v
        for k, v in (mapping or {}).items()
        if k in ("input", "output", "time", "hashes", "session")
    ]
    if fmt in PRESETS:
        c = PRESETS[fmt]
        named += [f for f in (c.input, c.output, c.time, c.hashes, c.session, *c.count_cols) if f]
    return list(dict.fromkeys(named))


def _pick_map(
    path: str, fmt: str | None, mapping: dict[str, str] | None, container: str, columns: list[str]
) -> tuple[str, ColumnMap, str]:
    """The column map: --map on top of --format's preset (or alone), the preset, or detection."""
    if fmt in PRESETS:
        cmap = PRESETS[fmt]
        if mapping:  # --map overrides only the keys it names; the preset supplies the rest
            pairs = _preset_pairs(cmap, columns, mapping)
            merged = replace(_map_from_pairs(pairs, columns, path), count_cols=cmap.count_cols)
            return container, merged.present(columns), fmt
        if cmap.input not in columns or cmap.output not in columns:
            raise InputError(
                f"--format {fmt} needs columns {cmap.input!r} and {cmap.output!r}; "
                f"the file has {columns[:20]}",
                path=path,
            )
        return container, cmap.present(columns), fmt
    if mapping:
        return container, _map_from_pairs(mapping, columns, path), fmt or container
    for name, cmap in PRESETS.items():
        if cmap.input in columns and cmap.output in columns:
            return container, cmap.present(columns), name
    # a Parquet file is binary by design: its columns, not 'not text (binary bytes)', say why
    why = "" if container == "parquet" else _sniff.hint(path)
    shown = "" if "binary" in why else f" with columns {columns[:20]}"
    raise InputError(
        f"cannot tell the trace format ({container}{shown}){why}; "
        "give --format or --map input=COL,output=COL[,time=COL,time_unit=ms]",
        path=path,
    )


def time_column_left_out(path: str, container: str, pairs: dict[str, str] | None) -> str | None:
    """The file's column that format detection reads as the arrival time (a preset's: Azure's
    TIMESTAMP, Mooncake's timestamp, ...) when a --map without time= left it unread, else None:
    a trace mapped so replays no timestamps although it has them."""
    if not pairs or "time" in pairs:
        return None
    columns = _columns(path, container, read_head(path))
    return next((c.time for c in PRESETS.values() if c.time and c.time in columns), None)


def _preset_pairs(cmap: ColumnMap, columns: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """A preset as --map pairs (optional columns only where the file has them), then --map."""
    have = cmap.present(columns)
    pairs = {"input": cmap.input, "output": cmap.output, "time_unit": cmap.time_unit}
    pairs["block_tokens"] = str(cmap.block_tokens)
    for key in ("time", "hashes", "session"):
        if getattr(have, key):
            pairs[key] = getattr(have, key)
    return {**pairs, **mapping}


def _refuse_duplicates(cmap: ColumnMap, columns: list[str], path: str) -> None:
    """A used column named twice in the header: the fast and careful CSV readers would take
    different copies, so neither is taken."""
    used = [cmap.input, cmap.output, cmap.time, cmap.hashes, cmap.session]
    twice = sorted({c for c in used if c and columns.count(c) > 1})
    if twice:
        raise InputError(
            f"column(s) {twice} appear more than once in the header: rename all but one",
            path=path,
        )
