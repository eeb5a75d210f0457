"""Simulation results: per-request arrays, percentiles, SLO attainment, goodput, timelines."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pdplan.errors import ConfigError
from pdplan.sim.runs import RunLog
from pdplan.sim.state import DONE, STATE_NAMES

__all__ = ["QUANTILES", "SAMPLE_STATES", "SimResult", "percentiles"]

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99.9": 0.999}


def percentiles(x: np.ndarray) -> dict[str, float]:
    """mean, p50, p90, p99, p99.9 of x (NaN-free), seconds in, seconds out."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if not len(x):
        return {"mean": float("nan"), **{k: float("nan") for k in QUANTILES}}
    q = np.quantile(x, list(QUANTILES.values()))
    return {"mean": float(x.mean()), **{k: float(v) for k, v in zip(QUANTILES, q, strict=True)}}


# a timeline sample's instance state, by the code Instance.sample records
SAMPLE_STATES = ("agg", "prefill", "decode", "draining", "switching")


@dataclass
class SimResult:
    """What a run produced. Times are seconds from the start of the run.

    TTFT = first token at the client - arrival. Aggregated: queue + prefill (all chunks).
    Disaggregated (as a client sees it through a PD proxy that hands the request to decode,
    e.g. vLLM's toy proxy): prefill queue + prefill + wait for a decode slot (batch and KV
    room: metric "slot_wait") + KV transfer (+ link latency: "xfer") + PD hand-off
    (SimConfig.handoff_s) + the wait for the next decode step boundary + the first decode
    step, which emits the first token. Both add `first_token_delay_s` (SimConfig.
    ttft_overhead_s) plus `first_token_steps` decode steps of the run's median TPOT, at most
    until the request's last token (SimConfig.ttft_decode_steps): the client
    sees the first token that long after the engine emits it (response start: HTTP headers,
    detokeniser hand-off, scheduler polls); later tokens catch up, so TPOT and ITL are the
    engine's, and E2E is the engine's finish - arrival, or the client's TTFT where that comes
    later (a very short output; a closed-loop client sends its next request then, so
    throughput x mean E2E = clients still holds). TPOT = (engine E2E - engine TTFT) /
    (output - 1); ITL = every gap between consecutive tokens.
    """

    columns: dict[str, np.ndarray]
    itl: RunLog
    duration_s: float
    n_requests: int
    dropped: int
    drop_reasons: dict[str, int]
    preemptions: int
    little_l: float  # time-average number of requests in the system
    instances: list[dict[str, Any]]
    events: int
    slo: tuple[float, float]
    warmup: int = 0
    trace_events: list[tuple] | None = None
    switches: list[tuple[float, int, str]] = field(default_factory=list)
    first_token_delay_s: float = 0.0
    first_token_steps: float = 0.0
    step_tokens: float = 1.0  # tokens a decode step emits (speculative decoding: > 1)
    prealloc: bool = False  # SimConfig.decode_prealloc: the decode slot wait came first

    def waits(self, c: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(prefill queue wait, decode slot wait) per row of columns `c`, s. Without decode
        pre-allocation: arrival -> prefill start, and prefill end -> KV transfer start (0
        when a layer-wise transfer starts before the end; NaN aggregated). With it the slot
        wait comes first, arrival -> the decode instance reserving the prompt's KV
        (xfer_start), and the prefill queue runs from there to the prefill's start."""
        queue = c["pf_start"] - c["arrival"]
        slot = np.maximum(c["xfer_start"] - c["pf_end"], 0.0)  # layer-wise may start early
        if not self.prealloc:
            return queue, slot
        pre = c["xfer_start"] <= c["pf_start"]  # reserved before its prefill (NaN: no)
        return (np.where(pre, c["pf_start"] - c["xfer_start"], queue),
                np.where(pre, c["xfer_start"] - c["arrival"], slot))  # fmt: skip

    def first_token_delay(self, c: dict[str, np.ndarray]) -> np.ndarray | float:
        """Seconds from the engine's first token to the client's, per row of columns `c`:
        first_token_delay_s + first_token_steps x the run's median TPOT (a typical decode
        step, x step_tokens when steps emit several; a request's own TPOT would carry its
        stalls), but never past the request's last
        token (the stream is flushed at the end: client TTFT <= E2E + first_token_delay_s)."""
        if not self.first_token_steps:
            return self.first_token_delay_s
        multi = (c["out"] > 1) & (c["state"] == DONE)
        tpot = (c["finish"][multi] - c["first"][multi]) / (c["out"][multi] - 1)
        typical = float(np.median(tpot)) * self.step_tokens if len(tpot) else 0.0  # one step
        late = np.fmin(self.first_token_steps * typical, c["finish"] - c["first"])  # NaN: open
        return self.first_token_delay_s + late

    def metric(self, name: str) -> np.ndarray:
        """ttft, tpot, e2e (client; e2e_engine: the engine's), queue (prefill queue wait), xfer
        (KV on the wire) or slot_wait
        (disaggregated: waiting for a decode slot, see waits) per measured request."""
        c = self.columns
        ok = (c["state"] == DONE) & (np.arange(len(c["state"])) >= self.warmup)
        if name == "ttft":
            v = c["first"] - c["arrival"] + self.first_token_delay(c)
        elif name == "e2e_engine":  # the engine's: arrival -> last token emitted
            v = c["finish"] - c["arrival"]
        elif name == "e2e":  # at the client: never before its (late) first token
            v = np.fmax(
                c["finish"] - c["arrival"], c["first"] - c["arrival"] + self.first_token_delay(c)
            )
        elif name == "tpot":
            multi = c["out"] > 1
            ok = ok & multi
            v = (c["finish"] - c["first"]) / np.maximum(c["out"] - 1, 1)
        elif name == "queue":
            v = self.waits(c)[0]
        elif name == "xfer":
            v = c["xfer_s"]
        elif name == "slot_wait":  # NaN (skipped) where no transfer started: aggregated
            v = self.waits(c)[1]
        else:
            raise ConfigError(
                f"unknown metric {name!r}: ttft, tpot, e2e, e2e_engine, queue, xfer or slot_wait"
            )
        return v[ok]

    def attainment(self) -> tuple[float, int]:
        """Share of measured requests meeting TTFT and TPOT SLOs at once, and their count.
        Every measured request that arrived counts: dropped and unfinished ones (still queued
        when the run ended) miss; single-token outputs need only the TTFT SLO."""
        c = self.columns
        idx = (np.arange(len(c["state"])) >= self.warmup) & np.isfinite(c["arrival"])
        done = (c["state"] == DONE) & idx
        ttft = c["first"] - c["arrival"] + self.first_token_delay(c)
        tpot = np.where(c["out"] > 1, (c["finish"] - c["first"]) / np.maximum(c["out"] - 1, 1), 0)
        good = done & (ttft <= self.slo[0]) & (tpot <= self.slo[1])
        denom = int(np.sum(idx))
        return (float(good.sum()) / denom if denom else float("nan")), int(good.sum())

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (seconds, requests/s, tokens/s)."""
        c = self.columns
        finished = c["state"] == DONE
        done = int(np.sum(finished))
        # rates over the measured window (first measured arrival -> last finish) count the
        # measured requests only, as goodput does: warm-up ones arrived before the window
        measured = finished & (np.arange(len(finished)) >= self.warmup)
        n_measured = int(np.sum(measured))
        e2e = self.metric("e2e")
        att, good = self.attainment()
        out_tok = float(np.sum(c["out"][measured]))
        dur = self.duration_s
        q = self.itl.quantiles(list(QUANTILES.values()))
        return {
            "requests": self.n_requests,
            "finished": done,
            "dropped": self.dropped,
            "drop_reasons": self.drop_reasons,
            "unfinished": self.n_requests - done - self.dropped,
            "duration_s": dur,
            "throughput_rps": n_measured / dur if dur > 0 else float("nan"),
            "output_tokens_per_s": out_tok / dur if dur > 0 else float("nan"),
            "ttft_s": percentiles(self.metric("ttft")),
            "tpot_s": percentiles(self.metric("tpot")),
            "itl_s": {"mean": self.itl.mean(), **dict(zip(QUANTILES, q, strict=True))},
            "e2e_s": percentiles(e2e),
            "queue_s": percentiles(self.metric("queue")),
            "kv_transfer_s": percentiles(self.metric("xfer")),
            "decode_slot_wait_s": percentiles(self.metric("slot_wait")),
            "decode_prealloc": self.prealloc,
            "prefix_hit_rate": self.prefix_hit_rate(),
            "preemptions": self.preemptions,
            "slo": {"ttft_s": self.slo[0], "tpot_s": self.slo[1], "attainment": att},
            "goodput_rps": good / dur if dur > 0 else float("nan"),
            "little": {
                "L_time_avg": self.little_l,
                # finished only: a dropped request spends no time in the system; the
                # engine's e2e, as L counts requests in the simulated system
                "lambda_W": n_measured / dur * float(np.mean(self.metric("e2e_engine")))
                if len(e2e) and dur > 0
                else float("nan"),
            },
            "instances": [{k: v for k, v in i.items() if k != "timeline"} for i in self.instances],
            "role_switches": [{"t_s": t, "instance": i, "role": r} for t, i, r in self.switches],
            "events": self.events,
        }

    def timeline_table(self) -> dict[str, np.ndarray]:
        """Every instance's samples, by time: t_s, instance (index in the summary's
        `instances`), name (e.g. prefill0:tp4, its name at the start), state (its role then,
        or draining / switching during a role switch: SAMPLE_STATES), queued (requests
        waiting there: prompts to prefill, and on a decode instance those waiting for a slot),
        running (sequences in its batch), kv_tokens (KV slots in use). Every instance is
        sampled every SimConfig.sample_interval_s."""
        parts = [
            (np.full(len(i["timeline"]), i["index"]), i["timeline"])
            for i in self.instances
            if len(i["timeline"])
        ]
        if not parts:
            keys = ("t_s", "instance", "name", "state", "queued", "running", "kv_tokens")
            return {k: np.zeros(0, dtype=object if k in ("name", "state") else float) for k in keys}
        idx = np.concatenate([p[0] for p in parts])
        s = np.concatenate([p[1] for p in parts])
        order = np.argsort(s[:, 0], kind="stable")
        s, idx = s[order], idx[order]
        state = np.array(SAMPLE_STATES, dtype=object)[s[:, 4].astype(np.int64)]
        return {"t_s": s[:, 0], "instance": idx, "name": self._names()[idx], "state": state,
                "queued": s[:, 1], "running": s[:, 2], "kv_tokens": s[:, 3]}  # fmt: skip

    def _names(self) -> np.ndarray:
        """Instance names by index, then '' (so that index -1, no instance, reads '')."""
        by_idx = sorted(self.instances, key=lambda i: i["index"])
        return np.array([str(i["name"]) for i in by_idx] + [""], dtype=object)

    def prefix_hit_rate(self) -> float:
        """Prompt tokens served from prefix caches / prompt tokens, over measured requests
        whose prefill started (0 without caching)."""
        c = self.columns
        started = np.isfinite(c["pf_start"])
        started[: self.warmup] = False
        total = float(np.sum(c["inp"][started]))
        return float(np.sum(c["hit"][started])) / total if total > 0 else 0.0

    def request_table(self, labels: bool = False) -> dict[str, np.ndarray]:
        """One row per request that arrived (id: its index in the workload), NaN where a
        stage did not happen; docs/simulate-outputs.md describes the columns. p_inst / d_inst
        are instance indices (-1: none) and state a code (sim.state: 1 unfinished, 2 done,
        3 dropped), or with labels instance names ('' for none) and STATE_NAMES."""
        c = self.columns
        arrived = np.isfinite(c["arrival"])
        sel = slice(None) if arrived.all() else np.flatnonzero(arrived)  # views when all did
        g = {k: c[k][sel] for k in _ROW_FIELDS}
        t = {"id": np.arange(len(arrived))[sel]}
        t.update({k: g[k] for k in _ROW_FIELDS[:9]})  # arrival .. xfer_start
        t["slot_wait"] = self.waits(g)[1]  # s, NaN: aggregated
        t.update({k: g[k] for k in _ROW_FIELDS[9:]})  # xfer_s .. state
        delay = np.broadcast_to(self.first_token_delay(g), (len(t["id"]),))
        t["ttft_overhead"] = np.array(delay, dtype=np.float64)  # s, the engine's
        t["ttft"] = g["first"] - g["arrival"] + delay  # at the client
        t["tpot"] = np.where(
            g["out"] > 1, (g["finish"] - g["first"]) / np.maximum(g["out"] - 1, 1), np.nan
        )
        t["e2e"] = np.fmax(g["finish"] - g["arrival"], t["ttft"])  # never before the first token
        if labels:
            names = self._names()
            t["p_inst"], t["d_inst"] = names[g["p_inst"]], names[g["d_inst"]]
            t["state"] = np.array(STATE_NAMES, dtype=object)[g["state"]]
        return t

    def chrome_trace(self) -> dict[str, Any]:
        """Chrome trace-event JSON (chrome://tracing, Perfetto): one track (thread) per
        instance, named as in the summary, with its prefill / decode / swap steps; role
        switches are instant events on the switching instance's track."""
        ev = self._chrome_meta()
        for idx, kind, t, d, n, b in self.trace_events or []:
            args = {"tokens_or_steps": n, "batch": b}
            ev.append({"name": kind, "ph": "X", "pid": 0, "tid": idx, "ts": t * 1e6,
                       "dur": d * 1e6, "args": args})  # fmt: skip
        ev += self._chrome_switches()
        return {"traceEvents": ev, "displayTimeUnit": "ms"}

    def chrome_trace_json(self) -> Iterator[str]:
        """json.dumps(self.chrome_trace()) as text chunks, streamed (sim/chrome.py): for
        writing a large run's trace without its events as dicts in memory."""
        from pdplan.sim.chrome import trace_json

        return trace_json(self._chrome_meta(), self.trace_events or [], self._chrome_switches())

    def _chrome_meta(self) -> list[dict[str, Any]]:
        """The trace's metadata events: the process's name, each instance's track."""
        ev: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "pdplan simulate"}}
        ]
        for i in sorted(self.instances, key=lambda i: i["index"]):
            track = {"ph": "M", "pid": 0, "tid": i["index"]}
            ev.append({"name": "thread_name", **track, "args": {"name": str(i["name"])}})
            ev.append({"name": "thread_sort_index", **track, "args": {"sort_index": i["index"]}})
        return ev

    def _chrome_switches(self) -> list[dict[str, Any]]:
        """Role switches as instant events on the switching instance's track."""
        return [
            {"name": f"becomes {role}", "ph": "i", "s": "t", "pid": 0, "tid": idx, "ts": t * 1e6}
            for t, idx, role in self.switches
        ]


# request_table's columns from SimResult.columns, in file order (slot_wait after xfer_start)
_ROW_FIELDS = ("arrival", "inp", "out", "hit", "p_inst", "d_inst", "pf_start", "pf_end",
               "xfer_start", "xfer_s", "first", "finish", "preempt", "state")  # fmt: skip
