"""Benchmark: read a generated 1M-row Mooncake-style JSONL (hash_ids of 10-30 ints); prints rows/s
and peak RSS. Usage: python benchmarks/bench_workload_jsonl.py [ROWS] [--careful]."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

_CHUNK = 100_000

_READ = """
import sys, time
import pyarrow as pa
threads = int(sys.argv[2])
pa.set_cpu_count(threads)
pa.set_io_thread_count(threads)
from pdplan.workload.formats import detect
from pdplan.workload.jsonl_reader import read_jsonl
path, fast = sys.argv[1], sys.argv[3] == "fast"
t0 = time.perf_counter()
container, cmap, name = detect(path, None, None)
w = read_jsonl(path, cmap, name, False, fast=fast)
dt = time.perf_counter() - t0
cpu = time.process_time()
with open("/proc/self/status") as f:  # VmHWM: this process image's own peak RSS (Linux), KiB
    rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
print(len(w), dt, cpu, rss, w.meta.get("fast_rows"), len(w.hash_ids))
"""


def generate(path: str, rows: int, seed: int = 0) -> None:
    """Mooncake FAST'25 layout: timestamp (ms), input_length, output_length, hash_ids (512-token
    blocks); the first blocks of a prompt are often shared (system prompts, earlier turns)."""
    rng = np.random.default_rng(seed)
    t_ms, next_id = 0, 10_000
    with open(path, "w") as f:
        for done in range(0, rows, _CHUNK):
            n = min(_CHUNK, rows - done)
            gaps = rng.exponential(1000.0 / 20.0, n).astype(np.int64)  # ~20 req/s, in ms
            stamps = (t_ms + np.cumsum(gaps)).tolist()
            t_ms = stamps[-1]
            nblocks = rng.integers(10, 31, n).tolist()
            shared = rng.integers(0, 6, n).tolist()  # leading blocks from a popular prefix
            prefix = rng.integers(0, 10_000, n).tolist()
            outs = rng.integers(1, 1024, n).tolist()
            lines = []
            for t, k, s, p, o in zip(stamps, nblocks, shared, prefix, outs, strict=True):
                ids = [p + j for j in range(s)] + list(range(next_id, next_id + k - s))
                next_id += k - s
                inp = k * 512 - (p % 512)  # 512 tokens per block, last block partly filled
                hashes = ", ".join(map(str, ids))
                lines.append(
                    f'{{"timestamp": {t}, "input_length": {inp}, "output_length": {o}, '
                    f'"hash_ids": [{hashes}]}}\n'
                )
            f.write("".join(lines))


def read_in_child(path: str, threads: int, fast: bool) -> tuple[int, float, float, int, int]:
    """Read in a fresh process so peak RSS is the reader's own."""
    mode = "fast" if fast else "careful"
    res = subprocess.run(
        [sys.executable, "-c", _READ, path, str(threads), mode],
        capture_output=True,
        text=True,
        check=True,
    )
    n, dt, cpu, rss, fast_rows, _ids = res.stdout.split()
    return int(n), float(dt), float(cpu), int(rss), int(fast_rows)


def main() -> None:
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = int(args[0]) if args else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mooncake_1m.jsonl")
        t0 = time.perf_counter()
        generate(path, rows)
        size_mb = os.path.getsize(path) / 1e6
        print(f"generated {rows:,} rows ({size_mb:,.0f} MB) in {time.perf_counter() - t0:.1f} s")
        modes = [(1, True), (os.cpu_count() or 1, True)]
        if "--careful" in sys.argv:
            modes.append((1, False))
        for threads, fast in modes:
            n, dt, cpu, rss_kib, fast_rows = read_in_child(path, threads, fast)
            assert n == rows, (n, rows)
            print(
                f"{'fast' if fast else 'careful'} threads={threads}: "
                f"{n / dt / 1e6:.3f} M rows/s ({dt:.2f} s wall, {cpu:.2f} s CPU, "
                f"{size_mb / dt:.0f} MB/s), peak RSS {rss_kib / 1024:.0f} MiB, "
                f"rows via fast path {fast_rows:,}"
            )


if __name__ == "__main__":
    main()
