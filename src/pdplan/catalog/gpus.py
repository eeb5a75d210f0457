"""GPU catalog: built-in accelerators, user YAML overrides, and cluster construction."""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pdplan.catalog.gpu_spec import ClusterSpec, GPUSpec
from pdplan.catalog.gpu_table import BUILTIN as _BUILTIN
from pdplan.errors import ConfigError, InputError

__all__ = ["USER_GPUS", "add_gpus", "get_gpu", "list_gpus", "load_gpu_file", "make_cluster"]


def _norm(name: str) -> str:
    """Case-, space- and underscore-insensitive key: 'H100_SXM' -> 'h100-sxm'."""
    return re.sub(r"[\s_]+", "-", name.strip().lower())


# What device queries add around a GPU's name: a vendor prefix ("NVIDIA H100 80GB HBM3",
# "AMD Instinct MI300X" from nvidia-smi / rocm-smi) and memory or module suffixes ("-oam").
_VENDOR = re.compile(r"^(nvidia|amd|intel)-(instinct-)?")
_SUFFIX = re.compile(r"-(\d+gb|hbm\d*e?|oam)$")


def _spellings(key: str) -> list[str]:
    """key, then without the vendor prefix, then with memory / module suffixes peeled off one
    at a time (each tried in turn; a suffix that names a distinct part, like -pcie, stays)."""
    out = [key]
    bare = _VENDOR.sub("", key)
    while True:
        if bare != out[-1]:
            out.append(bare)
        peeled = _SUFFIX.sub("", bare)
        if peeled == bare:
            return out
        bare = peeled


def _index(gpus: Mapping[str, GPUSpec]) -> dict[str, GPUSpec]:
    """Map every normalised name and alias (and `_` / `-` spelling) to its GPU."""
    out: dict[str, GPUSpec] = {}
    for g in gpus.values():
        for n in (g.name, *g.aliases):
            out[_norm(n)] = g
    return out


_BUILTIN_INDEX = _index(_BUILTIN)


def list_gpus() -> list[str]:
    """Canonical keys of the built-in GPUs, sorted."""
    return sorted(_BUILTIN)


# GPUs a user added for this process (e.g. `pdplan --gpu-file my_gpus.yaml ...`), by name
USER_GPUS: dict[str, GPUSpec] = {}


def add_gpus(gpus: Mapping[str, GPUSpec]) -> None:
    """Make `gpus` (from load_gpu_file) visible to every later get_gpu call in this process."""
    USER_GPUS.update(gpus)


def get_gpu(name: str | GPUSpec, extra: Mapping[str, GPUSpec] | None = None) -> GPUSpec:
    """A GPU by key or alias (case-insensitive); `extra` (from load_gpu_file) is consulted first,
    then the GPUs added with add_gpus, then the built-in catalog."""
    if isinstance(name, GPUSpec):
        return name
    if USER_GPUS:
        extra = {**USER_GPUS, **(extra or {})}
    key = _norm(name)
    for index in (_index(extra) if extra else {}, _BUILTIN_INDEX):
        for cand in _spellings(key):
            if cand in index:
                return index[cand]
    names = [*(extra or {}), *_BUILTIN_INDEX]
    close = difflib.get_close_matches(key, names, n=4, cutoff=0.5)
    hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
    known = ", ".join([*(extra or {}), *list_gpus()])
    raise ConfigError(f"unknown GPU {name!r}{hint} (known: {known}); add one with a GPU file")


def make_cluster(
    gpu: str | GPUSpec,
    nodes: int = 1,
    gpus_per_node: int | None = None,
    scaleup_domain: int | None = None,
    nic_gbps: float | None = None,
    extra: Mapping[str, GPUSpec] | None = None,
) -> ClusterSpec:
    """A homogeneous cluster of `nodes` servers; overrides left None keep the GPU's values."""
    spec = get_gpu(gpu, extra)
    checks = {"nodes": nodes, "gpus_per_node": gpus_per_node, "scaleup_domain": scaleup_domain}
    for field, v in checks.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ConfigError(f"cluster {field} must be a whole number >= 1, got {v!r}")
    if nic_gbps is not None and not nic_gbps > 0:
        raise ConfigError(f"cluster nic_gbps must be > 0 Gb/s, got {nic_gbps!r}")
    return ClusterSpec(
        gpu=spec,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        scaleup_domain=scaleup_domain,
        nic_gbps=nic_gbps,
    )


# ---- user GPU files ---------------------------------------------------------------------------
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


def _check_value(field: str, v: Any, bad: Any) -> Any:
    """One field's value, converted; `bad(msg)` raises the file/GPU-naming InputError."""
    if field in ("vendor", "source"):
        if not isinstance(v, str):
            raise bad(f"field {field!r} must be text, got {v!r}")
        return v
    if field == "aliases":
        if not isinstance(v, list) or not all(isinstance(a, str) for a in v):
            raise bad(f"field 'aliases' must be a list of names, got {v!r}")
        return tuple(_norm(a) for a in v)
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

    if not isinstance(entry, Mapping):
        raise bad(f"expected a mapping of fields, got {type(entry).__name__}")
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
        return dataclasses.replace(base, **vals)
    missing = [f for f in _REQUIRED if f not in vals]
    if missing:
        raise bad(f"missing {', '.join(missing)} (or give base: <gpu> to copy the rest)")
    vals.setdefault("vendor", "custom")
    vals.setdefault("source", f"user file {path}")
    for f in ("fp8_tflops", "fp4_tflops", "int8_tops"):
        vals.setdefault(f, None)
    return GPUSpec(**vals)


def _entries(data: Any, path: str) -> list[tuple[str, Any]]:
    """(name, fields) pairs from a list of GPUs (each with `name:`) or a name -> fields mapping."""
    if isinstance(data, Mapping):
        data = data.get("gpus", data) if set(data) == {"gpus"} else data
    if isinstance(data, Mapping):
        return [(str(k), v) for k, v in data.items()]
    if isinstance(data, list):
        out = []
        for i, e in enumerate(data):
            if not isinstance(e, Mapping) or not e.get("name"):
                raise InputError(f"GPU entry #{i + 1} needs a name: field", path=path)
            out.append((str(e["name"]), e))
        return out
    raise InputError("expected a list of GPUs or a mapping name -> fields", path=path)


def load_gpu_file(path: str | Path) -> dict[str, GPUSpec]:
    """User GPUs from YAML, keyed by normalised name; each may start from `base: <gpu>`."""
    p = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read GPU file: {e.strerror or e}", path=p) from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"not valid YAML: {getattr(e, 'problem', e)}", path=p, line=line) from e
    out: dict[str, GPUSpec] = {}
    for name, entry in _entries(data, p):
        key = _norm(name)
        out[key] = _gpu_from_entry(key, entry, p, out)
    return out
