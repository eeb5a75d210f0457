"""Format detection from a file's first bytes: container (CSV / JSONL / Parquet), JSONL field
names, and why a header reads oddly."""

from __future__ import annotations

import json
import re
from typing import NoReturn

from pdplan.errors import InputError
from pdplan.workload.files import is_gzip, read_head

__all__ = [
    "PARQUET_MAGIC",
    "container",
    "hint",
    "jsonl_keys",
    "refuse_json_array",
    "refuse_no_objects",
]

PARQUET_MAGIC = b"PAR1"  # Apache Parquet file header
_JSON_ARRAY = re.compile(r"\[\s*(\{|\[|\]|$)")  # '[{', '[[' or '[]': a JSON document
_JSONL_NAMES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
_ARRAYS = ": its lines are JSON arrays; pdplan reads one JSON object per line"


def _text(head: bytes) -> str:
    return head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")


def container(head: bytes, gz: bool, path: str) -> str:
    """parquet by its magic; jsonl when the text opens with '{', or with '[' on a line that
    is JSON or in a file named .jsonl: a JSON array line is a bad JSONL line for the reader
    to name, not a CSV header ('csv with columns ['[1024', '128]']'); else csv."""
    if head.startswith(PARQUET_MAGIC) and not gz:
        return "parquet"
    text = _text(head)
    if text.startswith("{"):
        return "jsonl"
    if text.startswith("[") and (path.lower().endswith(_JSONL_NAMES) or _is_json(text)):
        return "jsonl"
    return "csv"


def _is_json(text: str) -> bool:
    try:
        json.loads(text.splitlines()[0])
    except (ValueError, RecursionError):
        return False
    return True


def refuse_json_array(head: bytes, path: str) -> None:
    """A JSON array (a `.json` export) would read as a one-line CSV with odd column names."""
    if _JSON_ARRAY.match(_text(head)):
        raise InputError(
            "a JSON array; pdplan reads JSON Lines (one object per line): convert it with "
            f"`jq -c '.[]' {path} > trace.jsonl`",
            path=path,
        )


def jsonl_keys(text: str) -> list[str]:
    """Keys of the lines of the head that are JSON objects, in first-seen order. A bad line 1
    (a cut or corrupt record) is the reader's to name, or to skip with --skip-bad: taken as the
    columns it made the whole file 'a file with columns []', even with --format. All lines,
    not only the first: a line 1 without its "timestamp" or "session_id" made the whole file
    read without times or sessions, silently; now that line is named as missing its time."""
    keys: dict[str, None] = {}
    for line in filter(str.strip, text.splitlines()):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            keys.update(dict.fromkeys(str(k) for k in rec))
    return list(keys)


def refuse_no_objects(path: str) -> NoReturn:
    """A JSONL head with no JSON object: neither --format nor --map can name a field."""
    first = next((ln for ln in _text(read_head(path)).splitlines() if ln.strip()), "")
    why = _ARRAYS if first.startswith("[") else "; pdplan reads one JSON object per line"
    raise InputError(
        "cannot tell the trace format (JSON Lines, but no line of its first 64 KiB is a "
        f"JSON object){why}",
        path=path,
    )


def hint(path: str) -> str:
    """Why a CSV header reads oddly, when the head of the file shows it: a .gz name on a file
    that is not gzip, binary bytes, JSON lines, tab-separated columns."""
    head = read_head(path)
    if path.lower().endswith(".gz") and not is_gzip(path):
        return ": named .gz but not gzip-compressed"
    text = head.decode("utf-8", errors="replace")
    if "\ufffd" in text or any(ord(ch) < 32 and ch not in "\t\r\n" for ch in text):
        return ": not text (binary bytes)"
    first = next((ln for ln in text.splitlines() if ln.strip()), "").lstrip().lstrip("\ufeff")
    if first.startswith("["):
        return _ARRAYS
    if first.startswith("{"):  # a JSONL file read with --format csv
        return ": its lines are JSON objects (JSON Lines), not CSV rows"
    if "\t" in first and "," not in first:
        return ": tab-separated? pdplan reads comma-separated CSV"
    return ""
