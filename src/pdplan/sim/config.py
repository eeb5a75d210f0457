"""Simulator configuration: frozen per-instance specs, the cluster config and role switches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from operator import mul
from typing import Protocol

from pdplan.errors import ConfigError
from pdplan.perf.step import StepModel
from pdplan.sim.checks import check_instance, check_numbers, check_role_switch, check_switch
from pdplan.sim.gate import ContextGate
from pdplan.sim.kv_shape import fill_kv_shape

__all__ = [
    "PREEMPTION_MODES",
    "ROLES",
    "ROUTINGS",
    "TRANSFER_MODES",
    "InstanceSpec",
    "RoleSwitch",
    "SimConfig",
    "SwitchPolicy",
]

ROLES = ("agg", "prefill", "decode")
ROUTINGS = ("round_robin", "least_tokens", "kv_usage", "p2c", "prefix")
PAIRINGS = ("round_robin", "least_tokens", "kv_usage", "p2c", "local")
TRANSFER_MODES = ("after", "layerwise")
PREEMPTION_MODES = ("recompute", "swap")


@dataclass(frozen=True)
class InstanceSpec:
    """One serving instance (an engine over `gpus` GPUs) as the simulator sees it.

    role: "agg" (prefill + decode), "prefill" or "decode".
    step_model: times one iteration (perf.step.StepModel), seconds.
    max_batch: most sequences decoding (or prefilling, for a prefill role) at once.
    kv_capacity_tokens: KV cache slots of the instance, tokens (perf.memory.plan_memory).
    chunk_budget: agg: chunked prefill, token budget per iteration incl. decodes (vLLM
        max_num_batched_tokens); None = prefill-first. prefill role: prompt tokens per step;
        None = prefill_token_budget.
    prefill_token_budget: most prompt tokens in one prefill-first / prefill-role step; prompts
        fill it and the last is cut to fit, so a longer prompt takes several steps (SGLang
        --chunked-prefill-size, the engines' token budget on a prefill instance).
    node: placement; a P and a D on the same node move KV over NVLink.
    gpus / nic_bytes_per_s / nvlink_bytes_per_s / pcie_bytes_per_s: per-GPU link speeds, B/s
        (what a transfer achieves: callers that model a line rate's efficiency scale it in);
        the instance's NIC / NVLink link carries bw * gpus in all (requests on different ranks).
    kv_senders: GPUs whose links carry ONE request's KV (distinct KV shards:
        perf.kv_transfer.kv_shards; an MLA latent is sent by one rank per stage), so a lone
        transfer moves at most kv_senders * bw, and a swap copies KV bytes / kv_senders per
        GPU over PCIe; 0 = all `gpus`.
    prefix_cache_blocks: LRU prefix-cache capacity in blocks of the workload's block size
        (0 = off).
    recv_interval: while decoding, the scheduler takes in newly arrived requests only every
        recv_interval decode steps (SGLang --scheduler-recv-interval; 1 = every step, the
        engines' default); right after a prefill step, or when idle, it takes them at once.
    ctx_gate: a TensorRT-LLM context gate (sim.gate.ContextGate: attention-DP balancing or
        batch waiting) holding arrivals back while decodes run; None = none. Aggregated
        instances only, and not with recv_interval > 1.
    recv_interval > 1 applies to aggregated instances only (a prefill or decode role takes
    arrivals at its next step).
    kv_reserve_output: a prompt is admitted only when its KV and its whole output's fit beside
        what the running requests already reserved, so decodes never run out of KV and nothing
        is preempted (TensorRT-LLM's default capacity scheduler, GUARANTEED_NO_EVICT); False =
        admit on the prompt's KV and preempt when decodes fill the cache (vLLM, SGLang).
        Aggregated instances only.
    kv_state_tokens: KV-pool tokens one sequence's fixed recurrent state (SSM /
        linear-attention layers) takes while it holds KV there, on top of its tokens
        (perf.memory.MemoryPlan.state_tokens_per_seq: engines keep it in the KV cache's memory,
        one state per running request); None = from the config's KV shape,
        ceil(kv_state_bytes / kv_bytes(1) without it), 0 for models without such layers.
    kv_window_tokens: ((W, c), ...), one pair per group of sliding-window layers whose KV the
        pool's tokens do not count: a sequence of L tokens (prompt + output) holds
        ceil(sum c * min(L, W)) more KV-pool tokens, c per windowed token, for as long as it
        holds KV there (perf.kv_pool.growing_pool; vLLM V1's hybrid KV-cache manager frees
        the blocks that leave a window). Reserved at the sequence's final length from its
        admission: an over-charge, while it grows, of at most its unwritten tokens' share.
        () = none (a window model's kv_capacity_tokens then counts every layer per token).
    """

    role: str
    step_model: StepModel
    max_batch: int = 256
    kv_capacity_tokens: int = 1_000_000
    chunk_budget: int | None = None
    prefill_token_budget: int = 16384
    node: int = 0
    gpus: int = 1
    nic_bytes_per_s: float = 400e9 / 8  # 400 Gb/s ConnectX-7 per GPU (NVIDIA HGX H200 spec)
    nvlink_bytes_per_s: float = 450e9  # NVLink4 900 GB/s bidirectional per H100/H200 GPU
    pcie_bytes_per_s: float = 64e9  # PCIe Gen5 x16, ~64 GB/s per direction
    prefix_cache_blocks: int = 0
    name: str = ""
    recv_interval: int = 1
    kv_senders: int = 0
    ctx_gate: ContextGate | None = None
    kv_reserve_output: bool = False
    kv_state_tokens: int | None = None
    kv_window_tokens: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ConfigError(f"instance role {self.role!r}; expected one of {', '.join(ROLES)}")
        check_instance(self)

    @property
    def senders(self) -> int:
        """GPUs that carry one request's KV (kv_senders; 0 = every GPU)."""
        return self.kv_senders or self.gpus


@dataclass(frozen=True)
class RoleSwitch:
    """At `time_s`, instance `instance` stops taking work, drains, then becomes `role`."""

    time_s: float
    instance: int
    role: str

    def __post_init__(self) -> None:
        check_role_switch(self)


class SwitchPolicy(Protocol):
    """Decides role switches at intervals (the planner's dynamic mode supplies one).

    decide(now_s, view) is called at interval_s, then every interval_s (read again at each
    tick; it must stay >= 1 ms) while requests are left. `view` has one dict per instance,
    in instance order, counted as the timeline counts (SimResult.timeline_table):
    role (its current role; it changes when a switch completes), waiting (requests queued
    there: prompts not yet started, and on a decode instance those waiting for a slot),
    running (its batch, with the requests whose KV has arrived; on a prefill instance the
    prompts being prefilled), queued_tokens (prompt tokens still to prefill there),
    outstanding_tokens (its routing load: prompt + output of what a decode instance holds,
    the prompts not yet prefilled on a prefill one), draining (1 while it drains or is
    offline for a switch, else 0), next_role (the role a pending switch goes to, '' for
    none), kv_used_tokens / kv_capacity_tokens (its KV pool in use, as the timeline's
    kv_tokens, and its size, tokens), parked (requests prefilled there that wait, holding
    their KV there, for a decode instance to exist) and unrouted (cluster-wide, the same in
    every dict: prompts that arrived while no prefill instance existed). Parked and unrouted
    requests are in no instance's waiting or running.
    It returns a list of RoleSwitch (or None) to start now (their time_s is not used).
    A bad instance index or role is a ConfigError, a failing decide() a SimulationError
    (a pdplan error it raises, e.g. from RoleSwitch, passes through as it is).
    Asking for the role an instance has (not mid-switch), or for the one it is switching to,
    does nothing; another asked for mid-switch (its current role too) runs after that switch
    (SwitchingMixin). A policy may leave no prefill or no decode instance for
    a while (requests wait); if nothing is in flight and it changes nothing for
    switching.MAX_FROZEN ticks, the run ends with those requests unfinished."""

    interval_s: float

    def decide(
        self, now_s: float, view: list[dict[str, float | int | str]]
    ) -> list[RoleSwitch]: ...


@dataclass(frozen=True)
class SimConfig:
    """The whole simulated cluster.

    kv_bytes_per_token / kv_windows / kv_state_bytes: a sequence's KV, as
        ModelSpec.kv_bytes_parts splits it: B per token of the layers that grow without bound;
        ((window tokens, B per token inside it), ...) of window layers (sliding, DeepSeek-V4's
        raw window); fixed B per sequence (linear-attention state). kv_bytes(tokens) adds them
        up. All three unset (0, (), 0) take them from the first instance's cost model (its
        model at its KV dtype).
    kv_layers: layers whose KV is shipped (layer-by-layer transfer granularity); 0 likewise.
    routing: how a request picks its prefill / agg instance; pairing: how a finished prefill
        picks its decode instance (separate policies, as in SGLang's router).
    transfer_mode: "after" (KV moves once prefill completes) or "layerwise" (overlapped).
    link_latency_s / nvlink_latency_s: one-way latency added to a KV transfer between nodes
        (NICs) / inside one node (NVLink), s (`pdplan simulate` passes perf.kv_transfer.KV_PATHS'
        20 / 10 us, as `pdplan kv` times them).
    preemption: what a decode/agg instance does when KV runs out mid-generation: "recompute"
        (prefill prompt + output again) or "swap" (KV to host and back, KV bytes / PCIe B/s
        each way; the copies block the instance, as in vLLM: sim.preempt.PreemptMixin).
    exact: step every iteration (reference mode) instead of skipping between events.
    ttft_slo_s / tpot_slo_s: SLO thresholds for attainment and goodput, s.
    switch_cost_s: seconds an instance is unavailable while switching role.
    sample_interval_s: period of the utilisation / queue-length timeline, s.
    trace: collect a Chrome trace (slow; off by default).
    frontend_s / frontend_token_s: the API server takes requests one at a time (one process:
        HTTP parsing, tokenisation), frontend_s + frontend_token_s * prompt tokens each, before
        the engines see them; TTFT includes that wait, s and s/token (0, 0 = off). It also
        staggers requests sent together, as a real server does.
    ttft_overhead_s: time outside the engines on a request's way to its first token at the
        client, s: the client sees the first token this long after the engine emits it
        (response start: HTTP headers, detokeniser hand-off); later tokens catch up, so only
        TTFT counts it, not E2E, TPOT, ITL or a closed-loop client's cycle
        (Efficiency.ttft_overhead_s, fitted on measured TTFT this way).
    ttft_decode_steps: more of that delay in decode steps: each request's first token reaches
        the client this many typical decode steps (the run's median TPOT) late, but not after
        its last token (Efficiency.ttft_decode_steps), counted like ttft_overhead_s.
    handoff_s: disaggregated hand-off, s: from the KV's arrival on the decode side to the
        decode instance taking the request (the PD proxy's second request, the KV connector's
        completion notice, the decode scheduler's next poll); it delays the first decode step
        (Efficiency.pd_handoff_s).
    decode_prealloc: when a disaggregated request's decode instance takes it. False (vLLM's
        NIXL / LMCache connectors, TensorRT-LLM, Dynamo with those): after its prefill, the
        decode instance admits it (KV room and a batch slot) and pulls its KV; meanwhile the
        prefill instance holds it. True (SGLang's PD disaggregation, Mooncake): the router
        picks the prefill and the decode instance at arrival, and the decode instance
        pre-allocates the prompt's KV (the same admission rule, FIFO) before the prefill
        instance may start it (sglang/srt/disaggregation/decode.py DecodePreallocQueue,
        prefill.py PrefillBootstrapQueue): a full decode pool holds prompts back from
        prefill instead of letting them pile up prefilled. Not with role switches.
    """

    instances: tuple[InstanceSpec, ...]
    kv_bytes_per_token: float = 0.0  # B; 0 = from the instances' cost model (_kv_shape)
    kv_windows: tuple[tuple[int, float], ...] = ()  # (tokens, B/token within them)
    kv_state_bytes: float = 0.0  # B per sequence
    kv_layers: int = 0  # 0 = from the instances' cost model (_kv_shape)
    routing: str = "least_tokens"
    pairing: str = "least_tokens"
    transfer_mode: str = "after"
    link_latency_s: float = 10e-6  # RDMA one-way ~10 us (order of magnitude, IB NDR)
    nvlink_latency_s: float = 10e-6  # NVLink copy + completion notice, ~10 us (assumed)
    preemption: str = "recompute"
    exact: bool = False
    ttft_slo_s: float = 2.0
    tpot_slo_s: float = 0.1
    seed: int = 0
    # assumed: weights stay resident and only the role's scheduler / KV-transfer endpoints
    # restart (seconds; Splitwise's mixed pool and Arrow, arXiv 2505.11916, flip roles without
    # reloading); a full engine restart that reloads weights takes minutes: set it accordingly
    switch_cost_s: float = 5.0
    switches: tuple[RoleSwitch, ...] = ()
    policy: SwitchPolicy | None = field(default=None, compare=False)
    sample_interval_s: float = 1.0
    trace: bool = False
    frontend_s: float = 0.0
    frontend_token_s: float = 0.0
    ttft_overhead_s: float = 0.0
    ttft_decode_steps: float = 0.0
    handoff_s: float = 0.0
    decode_prealloc: bool = False

    def __post_init__(self) -> None:
        for name in ("instances", "switches"):  # lists taken as tuples
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        check_numbers(self)
        object.__setattr__(self, "seed", int(self.seed))  # numpy ints: random.Random wants int
        fill_kv_shape(self)
        if not (self.ttft_overhead_s >= 0 and self.handoff_s >= 0):
            raise ConfigError(
                f"ttft_overhead_s={self.ttft_overhead_s} and handoff_s={self.handoff_s} "
                "must be >= 0 s"
            )
        if not self.ttft_decode_steps >= 0:
            raise ConfigError(f"ttft_decode_steps={self.ttft_decode_steps} must be >= 0")
        _check(self.routing, ROUTINGS, "routing")
        _check(self.pairing, PAIRINGS, "pairing")
        _check(self.transfer_mode, TRANSFER_MODES, "transfer mode")
        _check(self.preemption, PREEMPTION_MODES, "preemption mode")
        roles = {s.role for s in self.instances}
        if "agg" in roles and roles != {"agg"}:
            raise ConfigError("mix of aggregated and disaggregated instances is not supported")
        if roles != {"agg"} and not {"prefill", "decode"} <= roles | _switch_roles(self):
            raise ConfigError("a disaggregated cluster needs >= 1 prefill and >= 1 decode instance")
        for sw in self.switches:
            check_switch(sw, len(self.instances), "bad")
        _check_switch_schedule(self)
        _check_prealloc(self)

    @property
    def disaggregated(self) -> bool:
        return self.instances[0].role != "agg"

    def kv_bytes_fn(self) -> Callable[[int], float]:
        """kv_bytes as the cheapest callable for a hot loop: with only the growing part set,
        a C-level multiply (tokens -> B/token x tokens), else kv_bytes."""
        if self.kv_windows or self.kv_state_bytes:
            return self.kv_bytes
        return partial(mul, float(self.kv_bytes_per_token))

    def kv_bytes(self, tokens: int) -> float:
        """KV bytes of one sequence of `tokens` tokens: growing + window-capped + fixed state
        (ModelSpec.kv_bytes from its parts, no per-layer loop), B."""
        b = tokens * self.kv_bytes_per_token
        if self.kv_state_bytes or self.kv_windows:
            b += self.kv_state_bytes
            for w, per in self.kv_windows:
                b += per * (tokens if tokens < w else w)
        return b


def _switch_roles(cfg: SimConfig) -> set[str]:
    return {s.role for s in cfg.switches}


def _check_switch_schedule(cfg: SimConfig) -> None:
    """Role switches (a schedule or a policy) need a disaggregated cluster, and a schedule
    must end with a prefill and a decode instance (else every later request waits forever).
    A role may be missing for a while: prompts wait for a prefill instance, prefilled
    requests park, holding their KV, until a decode instance is back (sim.handoff)."""
    if not (cfg.switches or cfg.policy is not None):
        return
    if not cfg.disaggregated:
        raise ConfigError("role switches need a disaggregated (prefill / decode) cluster")
    roles = [s.role for s in cfg.instances]
    last = None
    for sw in sorted(cfg.switches, key=lambda w: w.time_s):
        roles[sw.instance], last = sw.role, sw
    for need in ("prefill", "decode"):
        if last is not None and need not in roles:
            name = cfg.instances[last.instance].name or f"instance {last.instance}"
            raise ConfigError(
                f"after the last switch ({name} to {last.role} at {last.time_s:g} s) no "
                f"{need} instance is left: requests after it would never finish"
            )


def _check_prealloc(cfg: SimConfig) -> None:
    """decode_prealloc needs prefill and decode instances and no role switches (a switch
    drains an instance, and pre-allocations in flight across it are not modelled)."""
    if not cfg.decode_prealloc:
        return
    if not cfg.disaggregated:
        raise ConfigError("decode_prealloc needs a disaggregated (prefill / decode) cluster")
    if cfg.switches or cfg.policy is not None:
        raise ConfigError(
            "decode_prealloc with role switches is not modelled: pre-allocated decode KV "
            "would have to survive a drain; set decode_prealloc=False to simulate the switches"
        )


def _check(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {what} {value!r}; expected one of {', '.join(allowed)}")
