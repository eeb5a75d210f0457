"""User GPU files (`--gpu-file`): YAML entries checked field by field, bases in dependency order."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pdplan.catalog.gpu_spec import GPUSpec
from pdplan.catalog.gpus import builtin_gpu, get_gpu, norm_gpu_name
from pdplan.errors import ConfigError, InputError

__all__ = ["load_gpu_file"]

_FIELDS = {f.name: f for f in dataclasses.fields(GPUSpec)}
_INT_FIELDS = {"scaleup_domain", "gpus_per_node"}
_OPTIONAL_NUM = {"fp8_tflops", "fp4_tflops", "int8_tops", "tdp_w", "mamf_bf16_tflops"}
_REQUIRED = (
    "bf16_tflops",
    "hbm_gib",
    "hbm_tbps",
    "scaleup_gbps",
    "scaleup_domain",
    "gpus_per_node",
    "nic_gbps",
)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML 1.2: keys are unique;
    PyYAML would keep the last one silently)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue  # '<<' merge keys and complex keys: left to PyYAML
        where = (key_node.tag, key_node.value)
        line = key_node.start_mark.line + 1
        if where in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key_node.value!r} (first on line {seen[where]})",
                key_node.start_mark,
            )
        seen[where] = line
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def _check_value(field: str, v: Any, bad: Any) -> Any:
    """One field's value, converted; `bad(msg)` raises the file/GPU-naming InputError."""
    if field in ("vendor", "source"):
        if not isinstance(v, str):
            raise bad(f"field {field!r} must be text, got {v!r}")
        return v
    if field == "fp16_only":
        if not isinstance(v, bool):
            raise bad(f"field 'fp16_only' must be true or false, got {v!r}")
        return v
    if field == "aliases":
        if not isinstance(v, list) or not all(isinstance(a, str) and a.strip() for a in v):
            raise bad(f"field 'aliases' must be a list of non-empty names, got {v!r}")
        return tuple(norm_gpu_name(a) for a in v)
    if v is None and field in _OPTIONAL_NUM:
        return None
    if isinstance(v, str):  # YAML 1.1 reads '1e9' (no dot) as text
        try:
            v = float(v)
        except ValueError:
            raise bad(f"field {field!r} must be a number > 0, got {v!r}") from None
    num_ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf
    if field in _INT_FIELDS and not (num_ok and float(v).is_integer()):
        raise bad(f"field {field!r} must be a whole number >= 1, got {v!r}")
    if not num_ok:
        raise bad(f"field {field!r} must be a finite number > 0, got {v!r}")
    return int(v) if field in _INT_FIELDS else float(v)


def _gpu_from_entry(name: str, entry: Any, path: str, known: Mapping[str, GPUSpec]) -> GPUSpec:
    """One user GPU: validated fields, on top of `base:` when given."""

    def bad(msg: str) -> InputError:
        return InputError(f"GPU {name!r}: {msg}", path=path)

    fields = {k: v for k, v in entry.items() if k not in ("name", "base")}
    unknown = sorted(str(k) for k in fields if k not in _FIELDS)
    if unknown:
        raise bad(f"unknown field {', '.join(unknown)}; fields: {', '.join(sorted(_FIELDS))}")
    vals = {k: _check_value(k, v, bad) for k, v in fields.items()}
    vals["name"] = name
    if entry.get("base") is not None:
        try:
            base = get_gpu(str(entry["base"]), known)
        except ConfigError as e:
            raise bad(f"base: {e}") from e
        # overriding a GPU in place keeps its aliases ("h100" still finds the edited h100-sxm)
        vals.setdefault("aliases", base.aliases if base.name == name else ())
        vals.setdefault("source", f"user file {path} (base {base.name}: {base.source})")
        if "bf16_tflops" in vals and "mamf_bf16_tflops" not in vals and base.mamf_bf16_tflops:
            # the base's measured MAMF caps compute: a new peak keeps its achieved fraction
            vals["mamf_bf16_tflops"] = (
                base.mamf_bf16_tflops * vals["bf16_tflops"] / base.bf16_tflops
            )
        return _checked(dataclasses.replace(base, **vals), bad)
    missing = [f for f in _REQUIRED if f not in vals]
    if missing:
        raise bad(f"missing {', '.join(missing)} (or give base: <gpu> to copy the rest)")
    vals.setdefault("vendor", "custom")
    vals.setdefault("source", f"user file {path}")
    for f in ("fp8_tflops", "fp4_tflops", "int8_tops"):
        vals.setdefault(f, None)
    return _checked(GPUSpec(**vals), bad)


def _checked(g: GPUSpec, bad: Any) -> GPUSpec:
    """Cross-field rule: MAMF is a measured share of the BF16 peak, never above it."""
    if g.mamf_bf16_tflops is not None and g.mamf_bf16_tflops > g.bf16_tflops:
        raise bad(
            f"mamf_bf16_tflops {g.mamf_bf16_tflops:g} exceeds bf16_tflops {g.bf16_tflops:g}: "
            "MAMF is the measured achievable share of the dense BF16 peak, at most the peak"
        )
    return g


def _entry_name(raw: Any, entry: Any, path: str, where: str) -> str:
    """The normalised name of one entry; refuses an empty one and a differing `name:`."""
    name = "" if raw is None else str(raw)
    if not norm_gpu_name(name):
        raise InputError(f"{where} is empty ({name!r}): every GPU needs a name", path=path)
    if not isinstance(entry, Mapping):
        raise InputError(
            f"GPU {name!r}: expected a mapping of fields, got {type(entry).__name__}", path=path
        )
    given = entry.get("name")
    if given is not None and norm_gpu_name(str(given)) != norm_gpu_name(name):
        raise InputError(
            f"GPU {name!r}: name: {given!r} differs from its key {name!r}; the key is the "
            "name: drop name: or make the two equal",
            path=path,
        )
    return norm_gpu_name(name)


def _entries(data: Any, path: str) -> dict[str, Mapping[str, Any]]:
    """name -> fields from a list of GPUs (each with `name:`) or a name -> fields mapping."""
    if isinstance(data, Mapping):
        data = data.get("gpus", data) if set(data) == {"gpus"} else data
    if isinstance(data, Mapping):
        pairs = [(k, v, "a GPU's key") for k, v in data.items()]
    elif isinstance(data, list):
        pairs = []
        for i, e in enumerate(data):
            if not isinstance(e, Mapping) or not e.get("name"):
                raise InputError(f"GPU entry #{i + 1} needs a name: field", path=path)
            pairs.append((e["name"], e, f"the name of GPU entry #{i + 1}"))
    else:
        raise InputError("expected a list of GPUs or a mapping name -> fields", path=path)
    out: dict[str, Mapping[str, Any]] = {}
    for raw, entry, where in pairs:
        key = _entry_name(raw, entry, path, where)
        if key in out:
            raise InputError(f"GPU {key!r} is defined twice", path=path)
        out[key] = entry
    return out


def load_gpu_file(path: str | Path) -> dict[str, GPUSpec]:
    """User GPUs from YAML, keyed by normalised name; each may start from `base: <gpu>`
    (a built-in, or another GPU of the file, wherever it is defined)."""
    p = str(path)
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as e:
        raise InputError(f"cannot read GPU file: {e.strerror or e}", path=p) from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"not valid YAML: {getattr(e, 'problem', e)}", path=p, line=line) from e
    entries = _entries(data, p)
    out = _in_base_order(entries, p)
    _check_aliases(out, p)
    return {k: out[k] for k in entries}  # file order


def _file_bases(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, str | None]:
    """Each entry's `base:` when it names another entry of the file (by key or alias)."""
    index: dict[str, str] = {}
    for key, entry in entries.items():
        index.setdefault(key, key)
        builtin = builtin_gpu(key)
        inherited = builtin.aliases if builtin is not None and builtin.name == key else ()
        aliases = entry.get("aliases")
        listed = aliases if isinstance(aliases, list) else []
        for a in (*listed, *inherited):
            index.setdefault(norm_gpu_name(str(a)), key)
    deps: dict[str, str | None] = {}
    for key, entry in entries.items():
        base = entry.get("base")
        dep = None if base is None else index.get(norm_gpu_name(str(base)))
        deps[key] = dep if dep != key else None  # `h100-sxm: {base: h100-sxm}`: the built-in
    return deps


def _in_base_order(entries: Mapping[str, Mapping[str, Any]], path: str) -> dict[str, GPUSpec]:
    """Build every entry after the entry its `base:` names; a cycle of bases is refused."""
    deps = _file_bases(entries)
    done: dict[str, GPUSpec] = {}
    pending = list(entries)
    while pending:
        ready = [k for k in pending if deps[k] is None or deps[k] in done]
        if not ready:
            chain = [pending[0]]
            while (nxt := deps[chain[-1]]) is not None and nxt not in chain:
                chain.append(nxt)
            loop = " -> ".join([*chain[chain.index(str(nxt)) :], str(nxt)])
            raise InputError(f"GPU {chain[0]!r}: base: goes round in a cycle ({loop})", path=path)
        for k in ready:
            done[k] = _gpu_from_entry(k, entries[k], path, done)
        pending = [k for k in pending if k not in done]
    return done


def _check_aliases(gpus: Mapping[str, GPUSpec], path: str) -> None:
    """An alias may not take a name from a built-in GPU (unless the entry overrides that very
    GPU) nor from another GPU of the file: `--gpu h200` would silently change meaning."""
    owner: dict[str, str] = {key: key for key in gpus}
    for key, g in gpus.items():
        mine = builtin_gpu(key)
        for a in g.aliases:
            b = builtin_gpu(a)
            if b is not None and (mine is None or mine.name != b.name):
                raise InputError(
                    f"GPU {key!r}: alias {a!r} already names the built-in {b.name}, so "
                    f"`--gpu {a}` would silently pick {key}; choose another alias, or "
                    f"override {b.name} itself (key {b.name}, base: {b.name})",
                    path=path,
                )
            other = owner.setdefault(a, key)
            if other != key:
                raise InputError(
                    f"GPU {key!r}: alias {a!r} already names GPU {other!r} of this file",
                    path=path,
                )
