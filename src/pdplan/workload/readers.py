"""read_workload: pick a reader by --format or by the file's header, and read the trace."""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable

from pdplan.errors import InputError
from pdplan.workload.core import Workload
from pdplan.workload.csv_reader import read_csv
from pdplan.workload.formats import (
    CONTAINERS,
    PRESETS,
    ColumnMap,
    detect,
    looks_like_prometheus,
    parse_mapping,
    time_column_left_out,
)
from pdplan.workload.jsonl_reader import read_jsonl, read_parquet

__all__ = ["FORMATS", "READERS", "Reader", "read_workload", "register_reader"]

# A reader takes (path, mapping, skip_bad) and returns a Workload. Formats that are not a
# column layout (e.g. a `pdplan bench` result file, a Prometheus scrape) register here.
Reader = Callable[[str, dict[str, str] | None, bool], Workload]
READERS: dict[str, Reader] = {}

_BY_CONTAINER: dict[str, Callable[[str, ColumnMap, str, bool], Workload]] = {
    "csv": read_csv,
    "jsonl": read_jsonl,
    "parquet": read_parquet,
}


def register_reader(name: str, reader: Reader) -> None:
    """Add a named reader (used by --format NAME); later layers may add their result files."""
    READERS[name] = reader


def _prometheus(path: str, mapping: dict[str, str] | None, skip_bad: bool) -> Workload:
    from pdplan.workload.metrics import metrics_workload, read_metrics

    return metrics_workload(read_metrics(path))


register_reader("prometheus", _prometheus)

FORMATS: tuple[str, ...] = (*PRESETS, *CONTAINERS)


def known_formats() -> list[str]:
    return [*FORMATS, *READERS]


def read_workload(
    path: str | os.PathLike[str],
    fmt: str | None = None,
    mapping: str | dict[str, str] | None = None,
    skip_bad: bool = False,
) -> Workload:
    """Read a trace file (CSV / JSONL / Parquet, gzip'd or not) or a metrics URL.

    fmt: one of FORMATS or a registered reader; None detects it from the header.
    mapping: 'input=COL,output=COL,time=COL,time_unit=ms,session=COL,hashes=COL' for
    generic files. skip_bad: skip malformed rows and count them (meta['skipped']) instead
    of raising InputError naming the first one.
    """
    spath = os.fspath(path)
    pairs = parse_mapping(mapping)
    if fmt is not None and fmt not in FORMATS and fmt not in READERS:
        raise InputError(f"unknown format {fmt!r}; known: {', '.join(known_formats())}")
    if fmt in READERS:
        return READERS[fmt](spath, pairs, skip_bad)
    if spath.startswith(("http://", "https://")):
        return READERS["prometheus"](spath, pairs, skip_bad)
    if os.path.isdir(spath):
        raise InputError("is a directory, not a trace file", path=spath)
    if not os.path.exists(spath):
        raise InputError("no such file", path=spath)
    try:
        if fmt is None and pairs is None and looks_like_prometheus(spath):
            return READERS["prometheus"](spath, pairs, skip_bad)
        container, cmap, name = detect(spath, fmt, pairs)
        wl = _BY_CONTAINER[container](spath, cmap, name, skip_bad)
        _note_time_unit(wl, cmap, pairs)
        if cmap.time is None:  # a --map without time=: the column it left unread, if any
            left_out = time_column_left_out(spath, container, pairs)
            if left_out:
                wl.meta["time_column_left_out"] = left_out
        return wl
    except (EOFError, zlib.error) as exc:
        raise InputError(f"truncated or corrupt compressed data ({exc})", path=spath) from None
    except OSError as exc:  # gzip.BadGzipFile and read errors
        raise InputError(f"cannot read: {exc}", path=spath) from None


def _note_time_unit(wl: Workload, cmap: ColumnMap, pairs: dict[str, str] | None) -> None:
    """meta['time_unit']: the unit numeric timestamps were read in (Mooncake / pdplan: ms).
    Datetimes (Azure's TIMESTAMP; the builder notes their 'time_origin') carry no unit: a
    time_unit given for them was not applied, so say so rather than claim the times were
    read in it (`simulate` printed 'timestamps read in ms' for an unchanged replay); so is
    one given with no time column."""
    own = wl.meta.get("time_column_type")  # a Parquet duration column carries its unit
    if cmap.time and "time_origin" not in wl.meta and own is None:
        wl.meta["time_unit"] = cmap.time_unit
        return
    if not (pairs and "time_unit" in pairs):
        return
    held = f"durations ({own})" if own else "datetimes"
    why = f"column {cmap.time!r} holds {held}, read as such" if cmap.time else "no time column"
    warnings = wl.meta["warnings"]
    assert isinstance(warnings, list)
    warnings.append(
        f"time_unit={pairs['time_unit']} does not apply ({why}); drop it from --map"
        + ("" if cmap.time else " or add time=COLUMN")
    )
