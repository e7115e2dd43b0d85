"""Compute-bound kernel programs on the cpu target against numpy's BLAS
(issue 40): the suite's sgemm (f32) and ms_gemm (f64), as written (no
register tiles) and as the cpu schedules them by default (the
register-tile pass with this machine's sizes), at one size.

    python benchmarks/loop_nest_bench.py [--size 2048] [--repeat 5] [--threads T]
        [--programs sgemm,ms_gemm] [--skip-as-written] [--variant KEY=VALUE ...]
        [--tune BUDGET]

Each implementation is timed in its own block of ``--repeat`` calls after
a warm-up call, with a pause between blocks (OpenBLAS's threads spin after
a call and slow what runs next); numpy runs ``a @ b`` with the same
threads (``threadpoolctl`` is not needed: OPENBLAS_NUM_THREADS is set
before numpy loads).  ``--variant`` adds a row compiled with extra cpu
options (``tile_rows=4``, ``tile_panel=128`` ...).  ``--tune`` adds the
configuration ``hpvm.tune`` picks in BUDGET samples of the cpu's knobs
(its confirmation step measures the defaults and the program as written
beside the best).  Ratio = time / numpy's.
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAUSE = 0.5


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--programs", default="sgemm,ms_gemm")
    parser.add_argument("--skip-as-written", action="store_true",
                        help="leave out the slow program-as-written rows")
    parser.add_argument("--variant", action="append", default=[],
                        help="extra cpu options for one more row, as k=v[,k=v]")
    parser.add_argument("--tune", type=int, default=0, metavar="BUDGET",
                        help="add the configuration hpvm.tune finds in BUDGET samples")
    return parser.parse_args(argv)


def best_time(call, repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    time.sleep(PAUSE)
    return min(times)


def _variant(text: str) -> dict:
    options = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        options[key] = value.lower() == "true" if value.lower() in ("true", "false") \
            else int(value)
    return options


def _tuned(program, inputs: dict, args) -> tuple[str, dict]:
    """(label, cpu options) of the configuration hpvm.tune chooses (its
    samples run on every core)."""
    from hpvm.tune import tune
    result = tune(program.build(), ["cpu"], inputs, budget=args.tune, passes=(), repeat=3,
                  engine="random", timeout=600)
    chosen = {p.subject[1]: value for p, value in
              ((result.space.parameter(k), v) for k, v in result.best.values.items())
              if p.role == "knob"}
    changed = {k: v for k, v in chosen.items()
               if v != result.space.parameter(f"cpu.{k}").default}
    label = "tuned (" + (", ".join(f"{k}={v}" for k, v in changed.items()) or "the defaults") \
        + f"; {args.tune} samples)"
    return label, chosen


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import hpvm
    from benchmarks.programs.ms_gemm import ms_gemm
    from benchmarks.programs.sgemm import sgemm
    n = args.size
    rng = np.random.default_rng(0)
    programs = {
        "sgemm": (sgemm, np.float32, lambda a, b, c: dict(A=a, B=b, C=c, alpha=np.float32(1),
                                                           beta=np.float32(0))),
        "ms_gemm": (ms_gemm, np.float64, lambda a, b, c: dict(m1=a, m2=b)),
    }
    threads = {"threads": args.threads} if args.threads else {}
    print(f"# {shlex.join([Path(sys.argv[0]).name] + (argv or sys.argv[1:]))}")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus seen, "
          f"numpy {np.__version__}, size {n}^3")
    print("| program | implementation | ms | GFLOP/s | ratio to numpy |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in args.programs.split(","):
        program, dtype, inputs_of = programs[name]
        a, b, c = (rng.standard_normal((n, n)).astype(dtype) for _ in range(3))
        inputs = inputs_of(a, b, c)
        numpy_time = best_time(lambda: a @ b, args.repeat)
        rows = [("numpy a @ b (BLAS)", numpy_time)]
        variants = [("default (register tiles)", {})]
        if not args.skip_as_written:
            variants.insert(0, ("as written", {"register_tiles": False}))
        variants += [(f"default, {text}", _variant(text)) for text in args.variant]
        if args.tune:
            variants.append(_tuned(program, inputs, args))
        for label, options in variants:
            exe = hpvm.compile(program, targets=["cpu"], options={**threads, **options})
            result = exe(**inputs)
            output = result[next(iter(result))] if isinstance(result, dict) else result
            expected = a.astype(np.float64) @ b
            error = float(np.abs(output - expected).max() / np.abs(expected).max())
            assert error < 1e-4, f"{name} {label}: relative error {error:.2e}"
            rows.append((label, best_time(lambda: exe(**inputs), args.repeat)))
        for label, seconds in rows:
            rate = 2 * n ** 3 / seconds / 1e9
            print(f"| {name} | {label} | {seconds * 1e3:.1f} | {rate:.0f} | "
                  f"{seconds / numpy_time:.2f} |", flush=True)


if __name__ == "__main__":
    main()
