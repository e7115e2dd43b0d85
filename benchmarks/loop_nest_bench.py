"""Compute-bound kernel programs on the cpu target against numpy's BLAS
(issue 40): the suite's sgemm (f32) and ms_gemm (f64), as written (no
register tiles) and as the cpu schedules them by default (the
register-tile pass with this machine's sizes), at one size; and a
convolution written as loops over channels and taps
(benchmarks/loop_nests.py) against PyTorch's ``conv2d`` (oneDNN).

    python benchmarks/loop_nest_bench.py [--size 2048] [--repeat 5] [--threads T]
        [--programs sgemm,ms_gemm,conv] [--conv-shape C,K,H,R] [--skip-as-written]
        [--variant KEY=VALUE ...] [--tune BUDGET]
    python benchmarks/loop_nest_bench.py --gpu [--size 4096] [--repeat 7]
        [--pipelines "",tile{size=32},default]

Each implementation is timed in its own block of ``--repeat`` calls after
a warm-up call, with a pause between blocks (OpenBLAS's threads spin after
a call and slow what runs next); numpy runs ``a @ b`` with the same
threads (``threadpoolctl`` is not needed: OPENBLAS_NUM_THREADS is set
before numpy loads).  ``--variant`` adds a row compiled with extra cpu
options (``tile_rows=4``, ``tile_panel=128`` ...).  ``--tune`` adds the
configuration ``hpvm.tune`` picks in BUDGET samples of the cpu's knobs
(its confirmation step measures the defaults and the program as written
beside the best).  Ratio = time / numpy's.

``--gpu``: the suite's sgemm (or the f32 products of benchmarks/products.py
named by ``--programs``) on gpu_opencl with each ``--pipelines`` entry
(pipeline text; "" is the program as written, ``default`` the target's
default pipeline) against cuBLAS through PyTorch in FP32 without TF32.
hpvm's time is the node's own (the run report's, inputs copied in
before it), PyTorch's is CUDA events around ``a @ b``; best of
``--repeat``.  Ratio = cuBLAS's time / this (the share of cuBLAS's rate).
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
WARM_UP = 0.3
"""Seconds of calls before a timing: a small kernel's first calls on the
2-core VM ran up to 2x slower for the first tens of milliseconds after
its compile (flat_pixels' 2.45 / 4.2 ms bimodal best of 5)."""
DEFAULT_PROGRAMS = "sgemm,ms_gemm,conv"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--programs", default=DEFAULT_PROGRAMS,
                        help="--gpu: f32 products of benchmarks/products.py (sgemm)")
    parser.add_argument("--conv-shape", default="64,64,58,3",
                        help="conv: channels in, out, image size (no padding), taps")
    parser.add_argument("--skip-as-written", action="store_true",
                        help="leave out the slow program-as-written rows")
    parser.add_argument("--variant", action="append", default=[],
                        help="extra cpu options for one more row, as k=v[,k=v]")
    parser.add_argument("--tune", type=int, default=0, metavar="BUDGET",
                        help="add the configuration hpvm.tune finds in BUDGET samples")
    parser.add_argument("--gpu", action="store_true",
                        help="sgemm on gpu_opencl against cuBLAS instead")
    parser.add_argument("--pipelines", default=",tile{size=32},default",
                        help="--gpu: pipelines to compare, comma-separated outside braces")
    return parser.parse_args(argv)


def best_time(call, repeat: int, warm_up: float = WARM_UP) -> float:
    """The fastest of ``repeat`` calls, after calls for ``warm_up`` seconds
    (at least one)."""
    began = time.perf_counter()
    call()
    while time.perf_counter() - began < warm_up:
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


def _tuned(program, inputs: dict, expected, args) -> tuple[str, dict]:
    """(label, cpu options) of the configuration hpvm.tune chooses (its
    samples run on every core and are checked against ``expected``,
    numpy's product: the interpreter's of 2048^3 takes longer than a lent
    machine's call)."""
    from hpvm.tune import tune
    module = program.build()
    output = next(p.name for p in module.root_graph.params if p.direction in ("out", "inout"))
    result = tune(module, ["cpu"], inputs, budget=args.tune, passes=(), repeat=3,
                  engine="random", timeout=600, reference={output: expected})
    chosen = {p.subject[1]: value for p, value in
              ((result.space.parameter(k), v) for k, v in result.best.values.items())
              if p.role == "knob"}
    changed = {k: v for k, v in chosen.items()
               if v != result.space.parameter(f"cpu.{k}").default}
    label = "tuned (" + (", ".join(f"{k}={v}" for k, v in changed.items()) or "the defaults") \
        + f"; {args.tune} samples)"
    return label, chosen


def conv_rows(args, threads: dict) -> None:
    """The conv rows: hpvm's cpu as written and by default against torch's
    conv2d on the same threads."""
    import numpy as np
    import torch
    import hpvm
    from benchmarks.loop_nests import conv
    c, k, size, taps = (int(v) for v in args.conv_shape.split(","))
    out = size - taps + 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((c, size, size)).astype(np.float32)
    w = rng.standard_normal((k, c, taps, taps)).astype(np.float32)
    if args.threads:
        torch.set_num_threads(args.threads)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(tx[None], tw)[0].numpy()
        peer = best_time(lambda: torch.nn.functional.conv2d(tx[None], tw), args.repeat)
    rows = [("torch conv2d (oneDNN)", peer)]
    variants = [("default (register tiles)", {})]
    if not args.skip_as_written:
        variants.insert(0, ("as written", {"register_tiles": False}))
    inputs = dict(x=x, w=w, OH=out, OW=out)
    for label, options in variants:
        exe = hpvm.compile(conv, targets=["cpu"], options={**threads, **options})
        error = float(np.abs(exe(**inputs)["y"] - expected).max() / np.abs(expected).max())
        assert error < 1e-4, f"conv {label}: relative error {error:.2e}"
        rows.append((label, best_time(lambda: exe(**inputs), args.repeat)))
    flops = 2 * k * out * out * c * taps * taps
    for label, seconds in rows:
        print(f"| conv {args.conv_shape} | {label} | {seconds * 1e3:.1f} | "
              f"{flops / seconds / 1e9:.0f} | {seconds / peer:.2f} |", flush=True)


def gpu_rows(args) -> None:
    """The --gpu table (see the module text)."""
    import re
    import numpy as np
    import torch
    import hpvm
    from benchmarks import products
    from benchmarks.written_forms_bench import product_peers
    n = args.size
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(args.repeat + 1):
        start.record()
        ta @ tb
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    cublas = min(times[1:])
    names = "sgemm" if args.programs == DEFAULT_PROGRAMS else args.programs
    print(f"# {shlex.join(['loop_nest_bench.py'] + sys.argv[1:])}")
    print(f"# {torch.cuda.get_device_name()}, products {n}^3, node time, best of {args.repeat}")
    print("| program | implementation | ms | TFLOP/s | share of cuBLAS's rate |")
    print("| --- | --- | ---: | ---: | ---: |")
    print(f"| a @ b | cuBLAS FP32 (no TF32) | {cublas * 1e3:.3f} | "
          f"{2 * n ** 3 / cublas / 1e12:.1f} | 1.00 |")
    peers = product_peers(np)
    for name in names.split(","):
        inputs = products.inputs_for(name, rng, n, n, n)
        expected = {k: np.asarray(v, np.float64) for k, v in peers[name][1](inputs).items()}
        for pipeline in re.split(r",(?![^{]*})", args.pipelines):
            exe = hpvm.compile(products.TILED[name], targets=["gpu_opencl"],
                               options={"pipeline": pipeline})
            got = exe(**inputs)
            for port, want in expected.items():
                error = float(np.abs(got[port] - want).max() / np.abs(want).max())
                assert error < 1e-4, f"{name} {pipeline!r}: {port} relative error {error:.2e}"
            node = []
            for _ in range(args.repeat):
                exe(**inputs)
                node.append(exe.report().node_seconds)
            best = min(node)
            flops = 2 * n * next(iter(expected.values())).size
            print(f"| {name} | {pipeline or 'as written'} | {best * 1e3:.3f} | "
                  f"{flops / best / 1e12:.1f} | {cublas * flops / (2 * n ** 3) / best:.2f} |",
                  flush=True)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.gpu:
        return gpu_rows(args)
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
    print("| program | implementation | ms | GFLOP/s | ratio to numpy (conv: torch) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in args.programs.split(","):
        if name == "conv":
            conv_rows(args, threads)
            continue
        program, dtype, inputs_of = programs[name]
        a, b, c = (rng.standard_normal((n, n)).astype(dtype) for _ in range(3))
        inputs = inputs_of(a, b, c)
        expected = a.astype(np.float64) @ b
        numpy_time = best_time(lambda: a @ b, args.repeat)
        rows = [("numpy a @ b (BLAS)", numpy_time)]
        variants = [("default (register tiles)", {})]
        if not args.skip_as_written:
            variants.insert(0, ("as written", {"register_tiles": False}))
        variants += [(f"default, {text}", _variant(text)) for text in args.variant]
        if args.tune:
            variants.append(_tuned(program, inputs, expected.astype(dtype), args))
        for label, options in variants:
            exe = hpvm.compile(program, targets=["cpu"], options={**threads, **options})
            result = exe(**inputs)
            output = result[next(iter(result))] if isinstance(result, dict) else result
            error = float(np.abs(output - expected).max() / np.abs(expected).max())
            assert error < 1e-4, f"{name} {label}: relative error {error:.2e}"
            rows.append((label, best_time(lambda: exe(**inputs), args.repeat)))
        for label, seconds in rows:
            rate = 2 * n ** 3 / seconds / 1e9
            print(f"| {name} | {label} | {seconds * 1e3:.1f} | {rate:.0f} | "
                  f"{seconds / numpy_time:.2f} |", flush=True)


if __name__ == "__main__":
    main()
