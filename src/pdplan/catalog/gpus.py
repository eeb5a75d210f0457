"""GPU catalog: built-in accelerators, user YAML overrides, and cluster construction."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path

from pdplan.catalog.gpu_spec import ClusterSpec, GPUSpec
from pdplan.catalog.gpu_table import BUILTIN as _BUILTIN
from pdplan.errors import ConfigError

__all__ = [
    "USER_GPUS",
    "add_gpus",
    "builtin_gpu",
    "get_gpu",
    "list_gpus",
    "load_gpu_file",
    "make_cluster",
    "norm_gpu_name",
]


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


def norm_gpu_name(name: str) -> str:
    """The lookup key of a GPU name: 'H100_SXM' -> 'h100-sxm'."""
    return _norm(name)


def builtin_gpu(name: str) -> GPUSpec | None:
    """The built-in GPU that `name` (a key or alias, in any spelling get_gpu accepts) finds."""
    return next((_BUILTIN_INDEX[c] for c in _spellings(_norm(name)) if c in _BUILTIN_INDEX), None)


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
def load_gpu_file(path: str | Path) -> dict[str, GPUSpec]:
    """User GPUs from YAML, keyed by normalised name (see catalog.gpu_file)."""
    from pdplan.catalog.gpu_file import load_gpu_file as load

    return load(path)
