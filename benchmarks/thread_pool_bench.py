"""What a launch through the cpu target's native thread pool costs: a job
of empty chunks (a memset of 64 bytes each) run by ``ThreadPool.run``
with each number of workers, against the same job on a pool without
workers (the launching thread alone, no hand-off) in the same run.

    .venv/bin/python benchmarks/thread_pool_bench.py [--workers 1,3,7,15] [--launches 5000]

Per worker count: chunks = participants (one each) and 4 x participants;
the best and the median of 5 rounds of ``--launches`` launches, in us a
launch.  Ratio = pool / launching thread alone.
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time

import numpy as np

ROUNDS = 5


def launch_times(pool, chunks: int, launches: int) -> list[float]:
    """Microseconds a launch of ``chunks`` empty chunks, per round."""
    target = np.zeros(64 * chunks, np.uint8)
    calls = np.array([(target.ctypes.data, 64 * k, 64 * k + 64) for k in range(chunks)],
                     np.uint64)
    for _ in range(launches // 4):  # workers awake, code warm
        pool.run(pool._clear, calls)
    rounds = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        for _ in range(launches):
            pool.run(pool._clear, calls)
        rounds.append((time.perf_counter() - began) / launches * 1e6)
    return rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,3,7,15")
    parser.add_argument("--launches", type=int, default=5000)
    args = parser.parse_args(argv)
    from hpvm_cpu.codegen.thread_pool import ThreadPool
    print(f"command: {shlex.join([os.path.basename(sys.executable)] + sys.argv)}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus")
    print("| workers | chunks | pool us (best / median) | launching thread alone us | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    alone = ThreadPool(0)
    for workers in (int(w) for w in args.workers.split(",")):
        pool = ThreadPool(workers)
        for chunks in (workers + 1, 4 * (workers + 1)):
            pooled = launch_times(pool, chunks, args.launches)
            serial = min(launch_times(alone, chunks, args.launches))
            print(f"| {workers} | {chunks} | {min(pooled):.2f} / {statistics.median(pooled):.2f} "
                  f"| {serial:.2f} | {min(pooled) / serial:.2f} |")
        pool.stop()
    alone.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
