"""Read a user's efficiency overlay (`pdplan --efficiency-file FILE`, what `pdplan calibrate`
writes): `engines: {ENGINE: {field: value, ..., gpus: {GPU: {field: value}}}}`."""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import fields
from typing import Any

import yaml

from pdplan._text import foreign_digits
from pdplan.catalog.gpus import get_gpu
from pdplan.errors import ConfigError, InputError, PdplanError
from pdplan.perf.efficiency import Efficiency, canonical_engine

__all__ = ["EFFICIENCY_FIELDS", "check_overlay", "load_efficiency_file"]

# field name -> its type (float, int or bool), from the Efficiency dataclass
EFFICIENCY_FIELDS: dict[str, type] = {
    f.name: type(getattr(Efficiency(), f.name)) for f in fields(Efficiency)
}
# Fields that may be 0: counts of extra kernels and latencies the model may leave out (their
# packaged defaults are 0, perf/data/efficiency.yaml). Every other value is a positive
# quantity: an eta a fraction of a datasheet peak in (0, 1] (the YAML's header), a count or
# a time > 0.
_MAY_BE_ZERO = {n for n, t in EFFICIENCY_FIELDS.items() if t is not bool} & {
    "moe_kernels",
    "shared_expert_kernels",
    "mla_kernels",
    "indexer_kernels",
    "prompt_token_s",
    "ttft_overhead_s",
    "ttft_decode_steps",
    "pd_handoff_s",
    "frontend_s",
    "frontend_token_s",
    "nic_alpha_s",
    "seq_s",
}


def _value(where: str, name: str, value: Any) -> float | bool:
    """A checked value of field `name`; ConfigError naming `where` (file: engine[.gpu].field)."""
    kind = EFFICIENCY_FIELDS.get(name)
    if kind is None:
        known = ", ".join(n for n in EFFICIENCY_FIELDS)
        raise ConfigError(f"{where}{name}: unknown efficiency field; known: {known}")
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}{name}: must be true or false, not {value!r}")
        return value
    try:  # a string too: YAML 1.1 (PyYAML) reads 2e-6, without a '.', as text
        if isinstance(value, bool) or (isinstance(value, str) and foreign_digits(value)):
            raise ValueError  # float() reads '０.５' as 0.5
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}{name}: must be a number, not {value!r}") from None
    low_ok = v >= 0 if name in _MAY_BE_ZERO else v > 0
    if not math.isfinite(v) or not low_ok:
        need = ">= 0" if name in _MAY_BE_ZERO else "> 0"
        raise ConfigError(f"{where}{name}: must be a finite number {need}, not {value!r}")
    if name.endswith("_eta") and v > 1:
        raise ConfigError(f"{where}{name}: an eta is a fraction of a peak (<= 1), not {v:g}")
    if kind is int and v != int(v):
        raise ConfigError(f"{where}{name}: must be a whole number, not {value!r}")
    return v


def _block(where: str, spec: Any, gpus_ok: bool) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where.rstrip('.: ')}: expected a mapping of fields, not {spec!r}")
    out: dict[str, Any] = {}
    for name, value in spec.items():
        if name == "gpus" and gpus_ok:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}gpus: expected a mapping GPU -> fields")
            out["gpus"] = _gpus(where, value)
        else:
            out[str(name)] = _value(where, str(name), value)
    return out


def _gpus(where: str, spec: dict[Any, Any]) -> dict[str, dict[str, Any]]:
    """The `gpus:` blocks by canonical GPU name; two names of one GPU (h100, h100_sxm) are
    refused: the second would silently replace the first."""
    out: dict[str, dict[str, Any]] = {}
    seen: dict[str, Any] = {}
    for g, v in spec.items():
        key = _gpu_key(where, g)
        if key in seen:
            raise ConfigError(f"{where}gpus.{g}: {key} again (given as {seen[key]}): merge them")
        seen[key] = g
        out[key] = _block(f"{where}gpus.{g}.", v, False)
    return out


def _gpu_key(where: str, name: Any) -> str:
    try:
        return get_gpu(str(name)).name
    except PdplanError as exc:
        raise ConfigError(f"{where}gpus.{name}: {exc}") from None


def check_overlay(table: Any, where: str) -> dict[str, dict[str, Any]]:
    """The overlay `table` (the file's parsed YAML) checked and with canonical engine and GPU
    names; ConfigError naming `where` and the key for anything else."""
    if not isinstance(table, dict) or set(table) != {"engines"}:
        raise ConfigError(f"{where}: expected one top-level key `engines:` (engine -> fields)")
    engines = table["engines"]
    if not isinstance(engines, dict) or not engines:
        raise ConfigError(f"{where}: engines: expected a mapping engine -> fields")
    out: dict[str, dict[str, Any]] = {}
    seen: dict[str, Any] = {}
    for eng, spec in engines.items():
        try:
            key = canonical_engine(str(eng))
        except ConfigError as exc:
            raise ConfigError(f"{where}: engines.{eng}: {exc}") from None
        if key in seen:  # vllm and atom, trtllm and TensorRT-LLM: one engine twice
            raise ConfigError(
                f"{where}: engines.{eng}: {key} again (given as {seen[key]}): merge them"
            )
        seen[key] = eng
        out[key] = _block(f"{where}: engines.{eng}.", spec, True)
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last
    silently: `mem_eta` twice under one engine took the second)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if not isinstance(key, Hashable):
                continue  # SafeLoader's own construct_mapping refuses it, below
            if key in seen:
                raise InputError(
                    f"key {key!r} given twice in one mapping: keep one",
                    path=self.name,
                    line=key_node.start_mark.line + 1,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_efficiency_file(path: str) -> dict[str, dict[str, Any]]:
    """The overlay in YAML file `path`, checked (check_overlay); InputError for a file that
    cannot be read or parsed, or that gives a key twice in one mapping."""
    try:
        with open(path, encoding="utf-8") as fh:
            loader = _UniqueKeyLoader(fh)
            loader.name = path
            try:
                table = loader.get_single_data()
            finally:
                loader.dispose()
    except OSError as exc:
        raise InputError(f"cannot read efficiency file: {exc.strerror or exc}", path=path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text: re-save as UTF-8", path=path) from None
    except yaml.YAMLError as exc:  # one line: PyYAML's own message spans four
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"not valid YAML: {why}", path=path, line=line) from None
    return check_overlay(table, path)
