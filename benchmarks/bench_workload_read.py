"""Benchmark: read a generated 10M-row Azure-format CSV; prints rows/s and peak RSS (target
>= 2M rows/s on one core, <= 1 GB). Usage: python benchmarks/bench_workload_read.py [ROWS]."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

_CHUNK = 1_000_000

_READ = """
import resource, sys, time
import pyarrow as pa
threads = int(sys.argv[2])
pa.set_cpu_count(threads)
pa.set_io_thread_count(threads)
from pdplan.workload import read_workload
t0 = time.perf_counter()
w = read_workload(sys.argv[1])
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB; may include pre-exec parent
try:  # VmHWM: this process image's own peak RSS (Linux), reset at exec
    with open("/proc/self/status") as f:
        rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
except (OSError, StopIteration):
    pass
print(len(w), dt, rss, w.meta.get("reader"))
"""


def generate(path: str, rows: int, seed: int = 0) -> None:
    """Azure 2023 layout: TIMESTAMP with 7 fractional digits, ContextTokens, GeneratedTokens."""
    rng = np.random.default_rng(seed)
    t0 = np.datetime64("2023-11-16T18:15:46", "ns").astype(np.int64)
    with open(path, "w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        done = 0
        while done < rows:
            n = min(_CHUNK, rows - done)
            gaps_ns = rng.exponential(1e9 / 5000.0, n).astype(np.int64)  # ~5000 req/s
            ns = t0 + np.cumsum(gaps_ns)
            t0 = int(ns[-1])
            stamps = np.datetime_as_string(ns.view("datetime64[ns]"), unit="us")
            inp = rng.integers(1, 8192, n).tolist()
            out = rng.integers(1, 1024, n).tolist()
            lines = [
                f"{s[:10]} {s[11:]}0,{i},{o}\n"
                for s, i, o in zip(stamps.tolist(), inp, out, strict=True)
            ]
            f.write("".join(lines))
            done += n


def read_in_child(path: str, threads: int) -> tuple[int, float, int, str]:
    """Read in a fresh process so peak RSS is the reader's own."""
    res = subprocess.run(
        [sys.executable, "-c", _READ, path, str(threads)],
        capture_output=True,
        text=True,
        check=True,
    )
    n, dt, rss, reader = res.stdout.split()
    return int(n), float(dt), int(rss), reader


def main() -> None:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "azure_10m.csv")
        t0 = time.perf_counter()
        generate(path, rows)
        size_mb = os.path.getsize(path) / 1e6
        print(f"generated {rows:,} rows ({size_mb:,.0f} MB) in {time.perf_counter() - t0:.1f} s")
        for threads in (1, os.cpu_count() or 1):
            n, dt, rss_kib, reader = read_in_child(path, threads)
            assert n == rows, (n, rows)
            print(
                f"threads={threads}: {n / dt / 1e6:.2f} M rows/s "
                f"({dt:.2f} s, {size_mb / dt:.0f} MB/s), "
                f"peak RSS {rss_kib / 1024:.0f} MiB, reader={reader}"
            )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(generator process peak RSS {own:.0f} MiB, not counted above)")


if __name__ == "__main__":
    main()
