"""Every written form of a matrix product, a convolution, a stencil and a
reduction,
as the cpu target schedules it by default, against the library call a
numpy or PyTorch user writes for the same result, or numba's loops (issue
40: "several independently written variants of each kernel").

    python benchmarks/written_forms_bench.py
        [--forms products,convolutions,stencils,reductions,orders,steps,polybench]
        [--size 1024] [--skip-as-written]
        [--conv-shape 64,64,58,3] [--grid 4096] [--threads T] [--repeat 7]

The forms are benchmarks/products.py's (m = k = n = ``--size``; batched:
three products) and benchmarks/convolutions.py's (channels in, out, image
size, taps; conv1d over as many positions as the images have pixels) and
benchmarks/stencils.py's (a ``--grid`` square grid; the peer is numba's
parallel loops into a grid made once; hpvm makes a new grid each call,
and works on a copy of an in-out grid, which stays the caller's; a
second row, "donated", gives the in-out grid up with ``hpvm.donate``) and
benchmarks/reductions.py's (a ``--grid`` square matrix, against numpy's
``sum``, ``max`` and ``@``; numpy sums in its own order, so those outputs
are compared within 1e-3 of their largest value) and
benchmarks/loop_orders.py's (nests written column by column, ``--grid``
square, as written and with ``pipeline=default``, which swaps them,
against numpy's expression) and benchmarks/time_steps.py's (time steps
of a ``--grid`` square grid updated in place, copied back or from an old
copy, as written and with ``pipeline=default``, which fuses each update
into its stencil, against the same steps in numba's parallel loops) and
benchmarks/polybench.py's (PolyBench's kernels, ``--size`` on a side for
the cubic ones, ``--grid`` for the others, as written and with
``pipeline=default``, against numpy's expressions in f32).
Each output is checked against its peer's where the peer computes it.  Each implementation is timed
in its own block of ``--repeat`` calls after a warm-up call, with a pause
between blocks (OpenBLAS's and oneDNN's threads spin after a call and
slow what runs next).  Ratio = hpvm's time / the peer's.  The int32 and
min-plus products have no library peer: their row compares with the f32
product of the same shape (numpy's int32 product does not call BLAS).
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.loop_nest_bench import WARM_UP, best_time  # noqa: E402


def product_peers(np):
    """Form -> (peer's name, peer(inputs) -> {output: array})."""
    def f32_product(i):
        a, b = (v for v in i.values() if getattr(v, "ndim", 0) == 2)
        return {"f32 a @ b": a.astype(np.float32) @ b.astype(np.float32)}

    def distances(i):
        dots = i["a"] @ i["b"]
        return {"dots": dots, "dist": (i["a"] ** 2).sum(1)[:, None] - 2 * dots
                + (i["b"] ** 2).sum(0)[None]}
    return {
        "sgemm": ("alpha a @ b + beta c",
                  lambda i: {"C": i["alpha"] * (i["A"] @ i["B"]) + i["beta"] * i["C"]}),
        "ms_gemm": ("a @ b (f64)", lambda i: {"prod": i["m1"] @ i["m2"]}),
        "matmul_bt": ("a @ bt.T", lambda i: {"c": i["a"] @ i["bt"].T}),
        "matmul_at": ("at.T @ b", lambda i: {"c": i["at"].T @ i["b"]}),
        "flat_matmul": ("a @ b, reshaped", lambda i: {"c": (
            i["a"].reshape(i["m"], i["k"]) @ i["b"].reshape(i["k"], i["n"])).reshape(-1)}),
        "batched": ("np.matmul, batched", lambda i: {"y": i["x"] @ i["w"]}),
        "int_matmul": ("the f32 product's time", f32_product),
        "min_plus": ("the f32 product's time", f32_product),
        "biased_relu": ("max(x @ w + bias, 0)",
                        lambda i: {"y": np.maximum(i["x"] @ i["w"] + i["bias"], 0)}),
        "two_sums": ("a @ b and squared distances by BLAS", distances),
        "scaled_terms": ("alpha * a @ b", lambda i: {"c": i["alpha"] * i["a"] @ i["b"]}),
    }


def convolution_peers(torch):
    """Form -> (peer's name, peer(inputs) -> {output: array})."""
    conv = torch.nn.functional

    def tensors(i):
        return {k: torch.from_numpy(v) for k, v in i.items() if hasattr(v, "ndim") and v.ndim}

    def direct(i):
        return {"y": conv.conv2d(tensors(i)["x"][None], tensors(i)["w"])[0]}

    def strided(i):
        t = tensors(i)
        y = conv.conv2d(t["x"], t["w"], stride=int(i["stride"]))
        return {"y": y.reshape(*y.shape[:2], -1)}

    def channels_last(i):
        t = tensors(i)
        y = conv.conv2d(t["x"].permute(2, 0, 1)[None], t["w"].permute(3, 2, 0, 1))
        return {"y": y[0].permute(1, 2, 0)}

    def flat(i):
        t = tensors(i)
        y = conv.relu(conv.conv2d(t["x"][None], t["w"], t["bias"]))[0]
        return {"y": y.reshape(y.shape[0], -1)}
    return {
        "direct": ("conv2d", direct), "taps_outside": ("conv2d", direct),
        "batched_strided": ("conv2d, stride 2", strided),
        "channels_last": ("conv2d on NHWC / HWIO views", channels_last),
        "flat_pixels": ("relu(conv2d + bias)", flat),
        "conv1d": ("conv1d", lambda i: {"y": conv.conv1d(tensors(i)["x"][None],
                                                           tensors(i)["w"])[0]}),
    }


def stencil_peers():
    """Form -> (peer's name, peer(inputs) -> {output: array}): numba's
    parallel rows into a grid made once (a user's buffer kept between
    calls), its boundary copied and its interior swept, or every point
    from clamped neighbours."""
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def interior(a, b):
        n, m = a.shape
        for i in numba.prange(n):
            if i == 0 or i == n - 1:
                b[i, :] = a[i, :]
                continue
            b[i, 0], b[i, m - 1] = a[i, 0], a[i, m - 1]
            for j in range(1, m - 1):
                b[i, j] = np.float32(0.2) * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1]
                                             + a[i, j + 1])

    @numba.njit(parallel=True)
    def clamped(a, b):
        n, m = a.shape
        for i in numba.prange(n):
            up, down = max(i - 1, 0), min(i + 1, n - 1)
            for j in range(m):
                b[i, j] = np.float32(0.2) * (a[i, j] + a[up, j] + a[down, j]
                                             + a[i, max(j - 1, 0)] + a[i, min(j + 1, m - 1)])

    def into_kept_grid(sweep):
        kept = {}

        def peer(i):
            a = i["a"] if i["a"].ndim == 2 else i["a"].reshape(int(i["n"]), int(i["m"]))
            b = kept.setdefault(a.shape, np.empty_like(a))
            sweep(a, b)
            return {"b": b.reshape(i["a"].shape)}
        return peer
    peers = {name: ("numba, interior", into_kept_grid(interior))
             for name in ("branch_stores", "updated_value", "interior", "flat", "row_loops")}
    peers["clamped"] = ("numba, clamped", into_kept_grid(clamped))
    return peers


def rows(forms: dict, peers: dict, inputs_of, args, threads: dict, pipeline: str = "",
         donated_rows: bool = True):
    """(form, peer's name, hpvm ms, peer ms) of each form, its output
    checked against the peer's; ``pipeline``: the compile option;
    ``donated_rows``: whether a form updating an array in place has a
    second row with it given up."""
    import numpy as np
    import hpvm
    rng = np.random.default_rng(0)
    for name, program in forms.items():
        label, peer = peers[name]
        inputs = inputs_of(name, rng)
        expected = {k: np.asarray(v) for k, v in peer(inputs).items()}
        exe = hpvm.compile(program, targets=["cpu"],
                           options=dict(threads, pipeline=pipeline) if pipeline else threads)
        got = exe(**inputs)
        for port, want in expected.items():
            if port in got:
                scale = float(np.abs(want).max()) or 1.0
                error = float(np.abs(np.asarray(got[port], np.float64) - want).max()) / scale
                assert error < 1e-3, f"{name}: {port} off by {error:.1e} of its largest value"
        theirs = best_time(lambda: peer(inputs), args.repeat, args.warm_up)
        yield name, label, best_time(lambda: exe(**inputs), args.repeat, args.warm_up), theirs
        updated = [p.name for p in exe.module.root_graph.params if p.direction == "inout"]
        if updated and donated_rows:  # the same call with the updated arrays given up
            donated = {k: hpvm.donate(v) if k in updated else v for k, v in inputs.items()}
            mine = best_time(lambda: exe(**donated), args.repeat, args.warm_up)
            yield f"{name}, donated", label, mine, theirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forms",
                        default="products,convolutions,stencils,reductions,orders,steps,polybench")
    parser.add_argument("--size", type=int, default=1024, help="products: m = k = n")
    parser.add_argument("--conv-shape", default="64,64,58,3",
                        help="channels in, out, image size (no padding), taps")
    parser.add_argument("--grid", type=int, default=4096,
                        help="stencils and reductions: n = m")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--skip-as-written", action="store_true",
                        help="orders, steps, polybench: only the default pipeline's rows")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--warm-up", type=float, default=WARM_UP,
                        help="seconds of calls before each timing (loop_nest_bench.WARM_UP)")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import torch
    from benchmarks import (convolutions, loop_orders, polybench, products, reductions,
                            stencils, time_steps)
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = {"threads": args.threads} if args.threads else {}
    n = args.size
    channels, kernels, size, taps = (int(v) for v in args.conv_shape.split(","))
    command = ["benchmarks/written_forms_bench.py", *(argv or sys.argv[1:])]
    print(f"command: python {shlex.join(command)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus seen, "
          f"threads {args.threads or 'all'}")
    print("| form | peer | hpvm ms | peer ms | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    tables = []
    if "products" in args.forms:
        tables.append((products.TILED, product_peers(np),
                       lambda name, rng: products.inputs_for(name, rng, n, n, n)))
    if "convolutions" in args.forms:
        def conv_inputs(name, rng):
            length = size * size if name == "conv1d" else size
            return convolutions.inputs_for(name, rng, channels, kernels, length, taps)
        tables.append((convolutions.TILED, convolution_peers(torch), conv_inputs))
    if "stencils" in args.forms:
        tables.append((stencils.FORMS, stencil_peers(),
                       lambda name, rng: stencils.inputs_for(name, rng, args.grid, args.grid)))
    if "reductions" in args.forms:
        peers = {name: ("numpy", lambda i, name=name: {"out": reductions.reference(name, i)})
                 for name in reductions.FORMS}
        tables.append((reductions.FORMS, peers,
                       lambda name, rng: reductions.inputs_for(name, rng, args.grid, args.grid)))
    tables = [(forms, peers, inputs_of, "") for forms, peers, inputs_of in tables]
    both_ways = {"orders": (loop_orders, "numpy", lambda name, i: {
        "out": loop_orders.reference(name, i)}),
        "steps": (time_steps, "numba", lambda name, i: {"u": time_steps.numba_steps(i)}),
        "polybench": (polybench, "numpy", polybench.reference)}
    for family, (forms, label, peer) in both_ways.items():
        if family not in args.forms:
            continue
        peers = {name: (label, lambda i, name=name, peer=peer: peer(name, i))
                 for name in forms.FORMS}
        for pipeline in ("default",) if args.skip_as_written else ("", "default"):
            sizes = (args.size, args.grid) if forms is polybench else (args.grid, args.grid)
            tables.append((forms.FORMS, peers, lambda name, rng, forms=forms, sizes=sizes:
                           forms.inputs_for(name, rng, *sizes), pipeline))
    compared = [forms.FORMS for forms, _, _ in both_ways.values()]
    for forms, peers, inputs_of, pipeline in tables:
        with torch.no_grad():
            for name, label, mine, theirs in rows(forms, peers, inputs_of, args, threads,
                                                  pipeline, forms not in compared):
                name += f" (pipeline {pipeline})" if pipeline else \
                    " (as written)" if forms in compared else ""
                print(f"| {name} | {label} | {mine * 1e3:.2f} | {theirs * 1e3:.2f} | "
                      f"{mine / theirs:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
