"""Shared CLI helpers: JSON vs rich output, catalog lookups with clear errors."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["console", "emit", "kv_table", "to_jsonable"]

console = Console()


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
