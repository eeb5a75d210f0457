"""`pdplan simulate`'s option checks: options the deployment would ignore, output files,
engine behaviours an option would misstate (helpers of cli/simulate.py)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from pdplan.cli._paths import check_output
from pdplan.errors import ConfigError

from ._common import warn

__all__ = [
    "check_options",
    "check_outputs",
    "check_roles",
    "check_seed",
    "locality_note",
    "preemption_note",
    "unreached_switches",
]

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
        if o["prealloc"]:
            moot.append("--prealloc")
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


# Largest SLOs taken as seconds, s: a TTFT SLO past 10 minutes or a TPOT SLO past 10 s per
# token (no served LLM streams slower; `pdplan ratio --tpot` uses the same cap) is a value in ms.
MAX_SLO_TTFT_S, MAX_SLO_TPOT_S = 600.0, 10.0


def check_options(o: dict[str, Any]) -> None:
    """Refuse option values that are impossible, in the wrong unit, or would be ignored."""
    slo_ttft, slo_tpot, sample_interval = o["slo_ttft"], o["slo_tpot"], o["sample_interval"]
    positive = (("--slo-ttft", slo_ttft), ("--slo-tpot", slo_tpot))
    duration = o["duration"]
    if duration is not None and not duration > 0:  # here, not in the simulator: a trace's
        # replay note ('the first 0 s of t.csv: 0 of its 3 requests') was printed first
        raise ConfigError(f"--duration must be a positive number of seconds, not {duration}")
    for flag, v in (*positive, ("--sample-interval", sample_interval)):
        if v is not None and not v > 0:
            raise ConfigError(f"{flag}={v} must be a positive number of seconds")
    if sample_interval is not None and sample_interval < 1e-3:
        raise ConfigError(f"--sample-interval={sample_interval} must be >= 0.001 s")
    for flag, v, cap in (
        ("--slo-ttft", slo_ttft, MAX_SLO_TTFT_S),
        ("--slo-tpot", slo_tpot, MAX_SLO_TPOT_S),
    ):
        if v is not None and math.isinf(v):  # 'did you mean inf?' below said nothing
            raise ConfigError(f"{flag}={v} must be a finite number of seconds")
        if v is not None and v > cap:  # milliseconds typed as seconds
            raise ConfigError(
                f"{flag} is in seconds: did you mean {v / 1e3:g}? ({v:g} s is past the "
                f"{cap:g} s an interactive SLO allows)"
            )
    if o["switch_cost"] is not None and not o["switch"]:
        raise ConfigError("--switch-cost only applies with --switch: drop it or add a switch")


def check_outputs(o: dict[str, Any], workload: str = "", model: str = "") -> None:
    """Fail before simulating if an output file cannot be written, has the wrong kind, is
    named twice (the second write would replace the first) or is an input (the model's
    config.json, a spec's empirical:FILE)."""
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
        check_output(path, flag, _inputs(workload, model))  # writable now, not after the run


def _inputs(workload: str, model: str) -> dict[str, str]:
    """{flag: path} of the files the run reads besides a trace --workload: the --model's
    config.json (a path, not a catalog name) and a synthetic spec's isl / osl empirical:FILE."""
    files = {f"--workload {k}=empirical:": v for k, v in _EMPIRICAL.findall(workload)}
    if model and os.path.isdir(model):
        files["--model"] = os.path.join(model, "config.json")
    elif model and os.path.isfile(model):
        files["--model"] = model
    return files


# a synthetic spec's 'isl=empirical:FILE' / 'osl=empirical:FILE' (FILE up to the next ',')
_EMPIRICAL = re.compile(r"\b(isl|osl)=empirical:([^,]+)")


def preemption_note(engine: str, preemption: str) -> None:
    """--preemption swap with an engine that only recomputes: say the run models another one."""
    from pdplan.perf.efficiency import canonical_engine

    name = _RECOMPUTE_ONLY.get(canonical_engine(engine))
    if preemption == "swap" and name:
        warn(
            f"{name} preempts by recompute only; --preemption swap models swapping KV to host "
            "memory over PCIe (vLLM V0, TensorRT-LLM host offload), not this engine"
        )


def prealloc_of(engine_default: bool, o: dict[str, Any]) -> bool:
    """SimConfig.decode_prealloc: --prealloc / --no-prealloc, else the engine's (SGLang on
    xPyD), which with --switch is off, with a note (not modelled across role switches; an
    explicit --prealloc with --switch is refused by SimConfig)."""
    if o["prealloc"] is not None:
        return bool(o["prealloc"])
    if engine_default and o["switch"]:
        warn(
            "SGLang reserves decode KV before each prefill; that is not modelled across role "
            "switches, so this run admits requests on the decode side after their prefill"
        )
        return False
    return engine_default


def unreached_switches(specs: list[str], switches: tuple[Any, ...], columns: Any) -> None:
    """Warn about each --switch timed after the run's last request finished (or was dropped):
    the simulator skips a switch once every request is done, so it left no trace in the
    output and the run looked as if the switch had been made."""
    import numpy as np

    from pdplan.sim.state import RUNNING

    if not switches or bool(np.any(columns["state"] == RUNNING)):
        return  # requests left in flight: the run did not end on its own
    # a dropped request has no finish: its arrival stands in for when it left (drops are
    # decided on arrival, or at a deferred routing soon after it)
    ends = np.concatenate([columns["finish"], columns["arrival"]])
    ends = ends[np.isfinite(ends)]
    if not len(ends):
        return
    end = float(ends.max())
    for spec, sw in zip(specs, switches, strict=True):
        if sw.time_s > end:
            warn(
                f"--switch {spec!r} never happened: the last request was done at {end:.4g} s, "
                f"before its {sw.time_s:g} s; give an earlier time or more traffic"
            )


def check_seed(o: dict[str, Any], workload_draws: bool, instances: tuple[Any, ...] = ()) -> None:
    """Refuse a --seed that nothing in the run would use: no length or arrival drawn at
    random (a trace replayed by its timestamps or with --clients; a closed-loop spec of fixed
    lengths) and no p2c choice among two or more instances. Such runs are the same whatever
    the seed, and a user sweeping seeds would read identical results as a settled estimate.
    p2c over exactly 2 instances does draw: the pair's random order breaks load ties."""
    if o["seed"] is None or workload_draws or _p2c_draws(o, instances):
        return
    raise ConfigError(
        f"--seed {o['seed']}: nothing in this run is drawn at random (the workload's lengths "
        "and arrival times are fixed, and no --routing / --pairing p2c chooses among two or "
        "more instances), so every seed gives the same run; drop it, or draw arrivals with "
        "--rate (a trace) or lengths from a distribution (isl=lognormal:MEAN:SIGMA)"
    )


def _p2c_draws(o: dict[str, Any], instances: tuple[Any, ...]) -> bool:
    """Whether a p2c router draws: over one instance it takes that one (Router.choose).
    Role switches change the pools, so then every instance counts for both; no instances
    given (the pools unknown): p2c draws."""
    if not instances:
        return "p2c" in (o["routing"], o["pairing"])
    roles = ["any" if o.get("switch") else i.role for i in instances]
    routed = sum(r in ("agg", "prefill", "any") for r in roles)
    paired = sum(r in ("decode", "any") for r in roles)
    return (o["routing"] == "p2c" and routed >= 2) or (o["pairing"] == "p2c" and paired >= 2)
