"""`pdplan simulate`'s option checks: options the deployment would ignore, output files,
engine behaviours an option would misstate (helpers of cli/simulate.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pdplan.errors import ConfigError, InputError

from ._common import warn

__all__ = ["check_outputs", "check_roles", "locality_note", "preemption_note"]

# engines that preempt only by recompute: vLLM V1 (no swap space since V1's scheduler) and
# SGLang (retracts requests and recomputes them); TensorRT-LLM can offload KV to host memory
_RECOMPUTE_ONLY = {"vllm": "vLLM V1", "sglang": "SGLang"}


def check_roles(instances: tuple[Any, ...], o: dict[str, Any]) -> None:
    """Refuse options the deployment would silently ignore."""
    from pdplan.sim.config import PAIRINGS, TRANSFER_MODES

    for flag, value, known in (("transfer mode", o["transfer"], TRANSFER_MODES),
                               ("pairing", o["pairing"], PAIRINGS)):  # fmt: skip
        if value not in known:
            raise ConfigError(f"unknown {flag} {value!r}; known: {', '.join(known)}")
    if instances[0].role == "agg":
        moot = [
            f"--{k} {o[k]}"
            for k, default in (
                ("transfer", "after"),
                ("pairing", "least_tokens"),
                ("placement", "packed"),
            )
            if o[k] != default
        ]
        if o["switch"]:
            moot.append("--switch")
        if moot:
            raise ConfigError(
                f"{', '.join(moot)}: only a disaggregated deployment (xPyD, e.g. "
                "'1P:tp4+2D:tp4') has KV transfers, P->D pairing, P/D placement and "
                "prefill/decode roles"
            )
    if o["routing"] == "prefix" and o["prefix_cache"].strip().lower() == "off":
        raise ConfigError("--routing prefix routes by prefix-cache hits: add --prefix-cache auto")


def locality_note(instances: tuple[Any, ...], o: dict[str, Any]) -> None:
    """--pairing local with no prefill instance on a decode instance's node: say it falls
    back to least_tokens and every transfer crosses the NICs."""
    if o["pairing"] != "local":
        return
    p_nodes = {i.node for i in instances if i.role == "prefill"}
    d_nodes = {i.node for i in instances if i.role == "decode"}
    if p_nodes & d_nodes:
        if p_nodes <= d_nodes:  # every prefill pairs at home: decodes elsewhere get nothing
            idle = [i.name for i in instances if i.role == "decode" and i.node not in p_nodes]
            if idle:
                warn(
                    f"--pairing local: {', '.join(idle)} share no node with a prefill "
                    "instance and every prefill instance has a decode instance on its own "
                    "node, so they will get no requests (until a role switch changes that)"
                )
        return
    hw = {role: {i.name.partition("@")[2] for i in instances if i.role == role}
          for role in ("prefill", "decode")}  # fmt: skip
    if not hw["prefill"] & hw["decode"]:
        hint = "prefill and decode run on different GPU types, which never share a node"
    elif o["placement"] == "packed":
        hint = "add --placement mixed"
    else:
        hint = "the instances are too large to share a node"
    warn(
        f"--pairing local: no prefill instance shares a node with a decode instance "
        f"(--placement {o['placement']}), so it pairs as least_tokens and every KV transfer "
        f"crosses the NICs; {hint}"
    )


def check_outputs(o: dict[str, Any], workload: str = "") -> None:
    """Fail before simulating if an output file cannot be written, has the wrong kind or is
    named twice (the second write would replace the first)."""
    flags = (
        ("requests_out", "--requests-out"),
        ("timeline_out", "--timeline-out"),
        ("trace_out", "--chrome-trace"),
    )
    named = [(flag, o[key]) for key, flag in flags if o[key]]
    seen: dict[Path, str] = {}
    if workload and Path(workload).exists():
        seen[Path(workload).resolve()] = "--workload"
    for flag, path in named:
        real = Path(path).resolve()
        if real in seen:
            raise ConfigError(f"{seen[real]} and {flag} both name {path}: give each its own file")
        seen[real] = flag
    for key, flag, kinds in (
        ("requests_out", "--requests-out", (".csv", ".parquet")),
        ("timeline_out", "--timeline-out", (".csv", ".parquet")),
        ("trace_out", "--chrome-trace", (".json",)),
    ):
        path = o[key]
        if not path:
            continue
        if not path.lower().endswith(kinds):
            raise ConfigError(f"{flag} {path}: name it {' or '.join('*' + k for k in kinds)}")
        parent = Path(path).resolve().parent
        if not parent.is_dir():
            raise InputError("cannot write: no such directory", path=str(parent))
        if (Path(path).exists() and not os.access(path, os.W_OK)) or not os.access(parent, os.W_OK):
            raise InputError("cannot write: permission denied", path=path)


def preemption_note(engine: str, preemption: str) -> None:
    """--preemption swap with an engine that only recomputes: say the run models another one."""
    from pdplan.perf.efficiency import canonical_engine

    name = _RECOMPUTE_ONLY.get(canonical_engine(engine))
    if preemption == "swap" and name:
        warn(
            f"{name} preempts by recompute only; --preemption swap models swapping KV to host "
            "memory over PCIe (vLLM V0, TensorRT-LLM host offload), not this engine"
        )
