"""GPU catalog: built-in accelerators, user YAML overrides, and cluster construction."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pdplan.catalog.gpu_spec import ClusterSpec, GPUSpec
from pdplan.errors import ConfigError, InputError

__all__ = ["USER_GPUS", "add_gpus", "get_gpu", "list_gpus", "load_gpu_file", "make_cluster"]

# Numbers: reference/gpus.csv (dense, no sparsity), one row per GPU. Columns and units:
#   vendor, bf16 TFLOP/s, fp8 TFLOP/s, fp4 TFLOP/s, int8 TOP/s, memory GiB, HBM TB/s (1e12 B/s),
#   scale-up GB/s unidirectional per GPU, scale-up domain (GPUs), GPUs per node,
#   NIC Gb/s per GPU, host PCIe GB/s unidirectional, TDP W, measured max achievable BF16 matmul
#   TFLOP/s (MAMF, Bekman's ML Engineering table; A800 / H800 take the A100 / H100 figure: same
#   die and clocks; None where none was measured).
# Memory is the usable capacity where the csv notes give one (nvidia-smi MiB / 1024):
#   GB200 189471 MiB = 185.03 GiB, B300 275040 MiB = 268.59 GiB, GB300 284208 MiB = 277.55 GiB,
#   L40S 46068 MiB = 44.99 GiB; otherwise the csv's capacity column read as GiB (H100 80, H200 141).
# PCIe cards (H100-PCIe, L40S, L4): the csv lists scale-up domain 1 (no NVLink); we set the domain
# to the 8 GPUs of the node so TP inside a node runs at the PCIe scale-up figure (AIC's intra-node
# model: intra_node_bw = PCIe), instead of being barred.
_Row = tuple[str, float, float | None, float | None, float | None, float, float, float, int, int]
_ROWS: dict[str, tuple[_Row, float, float, float | None, float | None]] = {
    # key: ((vendor, bf16, fp8, fp4, int8, GiB, TB/s, scaleup GB/s, domain, per node), nic, pcie, W,
    #       MAMF)
    "a100-sxm": (("NVIDIA", 312, None, None, 624, 80, 2.039, 300, 8, 8), 200, 32, 400, 271.2),
    "h100-sxm": (("NVIDIA", 989, 1979, None, 1979, 80, 3.35, 450, 8, 8), 400, 64, 700, 794.5),
    "h100-pcie": (("NVIDIA", 756.5, 1513, None, 1513, 80, 2.0, 64, 8, 8), 400, 64, 350, None),
    "h200-sxm": (("NVIDIA", 989, 1979, None, 1979, 141, 4.8, 450, 8, 8), 400, 64, 700, 794.5),
    "h20": (("NVIDIA", 148, 296, None, 296, 96, 4.0, 450, 8, 8), 400, 64, 400, None),
    # export variants: the A100 / H100 die with NVLink cut to 400 GB/s bidirectional (200 each way)
    "a800-sxm": (("NVIDIA", 312, None, None, 624, 80, 2.039, 200, 8, 8), 200, 32, 400, 271.2),
    "h800-sxm": (("NVIDIA", 989, 1979, None, 1979, 80, 3.35, 200, 8, 8), 400, 64, 700, 794.5),
    "b200-sxm": (("NVIDIA", 2250, 4500, 9000, 4500, 180, 7.7, 900, 8, 8), 800, 64, 1000, 1745),
    "gb200": (("NVIDIA", 2500, 5000, 10000, 5000, 185.03, 8.0, 900, 72, 4), 800, 64, 1200, 1822),
    "b300-sxm": (("NVIDIA", 2250, 4500, 14000, None, 268.59, 7.75, 900, 8, 8), 800, 64, 1100, 1769),
    "gb300": (("NVIDIA", 2500, 5000, 15000, None, 277.55, 8.0, 900, 72, 4), 800, 64, 1400, None),
    "l40s": (("NVIDIA", 362, 733, None, 733, 44.99, 0.864, 32, 8, 8), 400, 32, 350, None),
    "l4": (("NVIDIA", 121, 242, None, 242, 24, 0.3, 32, 8, 8), 200, 32, 72, None),
    "mi300x": (("AMD", 1307.4, 2614.9, None, 2614.9, 192, 5.3, 448, 8, 8), 400, 64, 750, 668.4),
    "mi325x": (("AMD", 1307.4, 2614.9, None, 2614.9, 256, 6.0, 448, 8, 8), 400, 64, 1000, 784.9),
    "mi355x": (("AMD", 2516.6, 5033.2, 10066.4, 5033.2, 288, 8.0, 448, 8, 8), 400, 64, 1400, 1565),
    "gaudi3": (("Intel", 1835, 1835, None, None, 128, 3.7, 600, 8, 8), 600, 64, None, 1243),
}

# The csv's `sources` column, plus what we assumed where it is blank.
_SOURCES: dict[str, str] = {
    "a100-sxm": "AIC a100_sxm.yaml; MLE-ACC; MLE-NET; llm-analysis gpu_configs/a100-sxm-80gb.json",
    "h100-sxm": "AIC h100_sxm.yaml; MLE-ACC; MLE-NET; llm-analysis h100-sxm-80gb.json",
    "h100-pcie": "AIC h100_pcie.yaml; MLE-ACC",
    "h200-sxm": "AIC h200_sxm.yaml; MLE-ACC; MLE-NET",
    "h20": "PRESS (tweaktown 2024 H20 article); citsjtu2020/LLM-Prof hardware_spec.md; "
    "ASSUMED nic 400 Gb/s (csv blank)",
    "a800-sxm": "NVIDIA A800 40GB/80GB datasheet (NVLink 400 GB/s bidirectional); compute and "
    "HBM as A100-80GB SXM (same GA100 die); ASSUMED nic 200 Gb/s as A100",
    "h800-sxm": "NVIDIA H800 SXM5 datasheet (NVLink 400 GB/s bidirectional); compute and HBM "
    "as H100 SXM (same GH100 die); ASSUMED nic 400 Gb/s as H100 (Mooncake FAST'25: 8xH800 RDMA)",
    "b200-sxm": "AIC b200_sxm.yaml; MLE-ACC; MLE-NET",
    "gb200": "AIC gb200.yaml; MLE-ACC",
    "b300-sxm": "AIC b300_sxm.yaml; MLE-ACC",
    "gb300": "AIC gb300.yaml; MLE-ACC",
    "l40s": "AIC l40s.yaml; MLE-ACC",
    "l4": "AIC l4.yaml",
    "mi300x": "MLE-ACC; MLE-NET; GenZ Systems/system_configs.py; "
    "MicrosoftDocs nd-mi300x-v5-series.md",
    "mi325x": "MLE-ACC; MLE-NET; PRESS (TDP)",
    "mi355x": "MLE-ACC (formula 2400MHz*512*2*1024); PRESS (tomshardware/theregister 1400 W); "
    "ASSUMED scale-up 448 GB/s (same as MI300X: 7 XGMI links x 64 GB/s; csv blank, "
    "not confirmed from a primary source) and nic 400 Gb/s (csv blank)",
    "gaudi3": "MLE-ACC; MLE-NET; GenZ system_configs.py",
}

_ALIASES: dict[str, tuple[str, ...]] = {
    "a100-sxm": ("a100", "a100-80gb", "a100-sxm4", "a100-80gb-sxm", "a100-sxm-80gb"),
    "h100-sxm": ("h100", "h100-80gb", "h100-sxm5", "h100-sxm-80gb", "h100-80gb-hbm3"),
    "h100-pcie": ("h100-pcie-80gb",),
    "h200-sxm": ("h200", "h200-141gb", "h200-sxm-141gb"),
    "h20": ("h20-96gb", "h20-sxm", "h20-sxm5"),
    "a800-sxm": ("a800", "a800-80gb", "a800-sxm4"),
    "h800-sxm": ("h800", "h800-80gb", "h800-sxm5"),
    "b200-sxm": ("b200", "b200-180gb", "dgx-b200", "hgx-b200"),
    "gb200": ("gb200-nvl72", "gb200-nvl"),
    "b300-sxm": ("b300", "hgx-b300", "b300-288gb"),
    "gb300": ("gb300-nvl72", "gb300-nvl"),
    "l40s": ("l40s-48gb",),
    "l4": ("l4-24gb",),
    "mi300x": ("mi300", "instinct-mi300x"),
    "mi325x": ("instinct-mi325x",),
    "mi355x": ("instinct-mi355x",),
    "gaudi3": ("gaudi-3", "hl-325l"),
}


def _norm(name: str) -> str:
    """Case-, space- and underscore-insensitive key: 'H100_SXM' -> 'h100-sxm'."""
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _build(key: str) -> GPUSpec:
    (vendor, bf16, fp8, fp4, int8, gib, tbps, su, dom, per), nic, pcie, tdp, mamf = _ROWS[key]
    return GPUSpec(
        name=key,
        vendor=vendor,
        bf16_tflops=float(bf16),
        fp8_tflops=None if fp8 is None else float(fp8),
        fp4_tflops=None if fp4 is None else float(fp4),
        int8_tops=None if int8 is None else float(int8),
        hbm_gib=float(gib),
        hbm_tbps=float(tbps),
        scaleup_gbps=float(su),
        scaleup_domain=int(dom),
        gpus_per_node=int(per),
        nic_gbps=float(nic),
        pcie_gbps=float(pcie),
        tdp_w=None if tdp is None else float(tdp),
        mamf_bf16_tflops=None if mamf is None else float(mamf),
        aliases=_ALIASES.get(key, ()),
        source=_SOURCES[key],
    )


_BUILTIN: dict[str, GPUSpec] = {k: _build(k) for k in _ROWS}


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
        if key in index:
            return index[key]
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
    num_ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    if field in _INT_FIELDS and not (num_ok and float(v).is_integer()):
        raise bad(f"field {field!r} must be a whole number >= 1, got {v!r}")
    if not num_ok:
        raise bad(f"field {field!r} must be a number > 0, got {v!r}")
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
