"""The gpu_opencl programs against the GPU's measured peaks (issue 40's
roofline table), beside their hand-written OpenCL kernels; with
``--target cpu``, the cpu's compute-bound programs against the host's.

    python benchmarks/roofline_bench.py [--programs sgemm,mriq,stencil,spmv,blur]
        [--size large] [--repeat 15] [--pipelines ,default]
    python benchmarks/roofline_bench.py --target cpu [--threads N]
        [--programs sgemm,ms_gemm,mriq]
    ... [--tune BUDGET]     # and a row tuned with hpvm.tune in BUDGET samples
    ... [--bound]           # and each hpvm row again, called through exe.bind

On gpu_opencl every row runs on the device alone: hpvm's inputs are made
there once (``exe.device_array``) and its outputs left there
(``outputs="device"``); the hand-written kernels (the suite's OpenCL
peers) read inputs copied once.  A row's time is the median of whole
calls, each waited for (every launch and every wait of the runtime
included, no host copies); hpvm's rows also give the nodes' own time
(``exe.report()``: each kernel's own time, from OpenCL profiling
events), and the hand-written kernels theirs (profiling events too);
"of bound, own time" is a row's share of its bound on that time.  On
the cpu a row is a whole call from host arrays, beside the suite's cpu
peers (numba).  hpvm's rows of a program are timed in
turn, call by call.  With ``--tune``, each program is also tuned
(``hpvm.tune``, its default engine, objective the nodes' own time on
gpu_opencl and the whole call on the cpu, the program's reference
outputs as the check) and its best configuration timed as the rows
above; the tuner's confirmation step keeps the program as written and
the default pipeline among the candidates, so the tuned row is never
slower than both in the tuner's measurement.

The work of a program is what its algorithm must do, counted from its
inputs (WORK below), not what a schedule does: floating-point operations
(a sine or cosine counts as one) and the bytes it must move at least (each
input read once, each output written once; a sweep of stencil reads and
writes the grid).  Peaks are measured in the same run.  GPU: the
bandwidth of a float4 copy kernel over 256 MiB (read and write counted,
on its own time: profiling events; until 2026-12-02 on a whole call's
host time, which put it ~10% lower on the H200), and the
FP32 rate of cuBLAS (through PyTorch, TF32 off) on 8192^3 where PyTorch
sees a CUDA GPU.  cpu: the bandwidth of the cpu target's copy on every
core (its thread pool) over 256 MiB, and the rates of numpy's BLAS sgemm
and dgemm on 2048^3 (its own threads).  A row's bound is the lower of
its precision's peak and its intensity (operations per byte) times the
bandwidth; "of bound" is its rate against that bound.
"""
from __future__ import annotations

import argparse
import importlib
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.onnx_bench import median_ms  # noqa: E402

F32 = 4


def _sgemm(inputs) -> tuple[float, float]:
    (m, k), n = inputs["A"].shape, inputs["B"].shape[1]
    return 2.0 * m * n * k + 3.0 * m * n, F32 * (m * k + k * n + 2 * m * n)


def _mriq(inputs) -> tuple[float, float]:
    samples, voxels = inputs["kx"].size, inputs["x"].size
    # phi_mag: 3 a sample; Q: 6 for the angle, a cosine, a sine, 2 x 2 for the sums
    return 3.0 * samples + 12.0 * samples * voxels, F32 * (5 * samples + 5 * voxels)


def _stencil(inputs) -> tuple[float, float]:
    from benchmarks.programs.stencil import ITERATIONS
    points = inputs["A"].size
    return 8.0 * points * ITERATIONS, 2.0 * F32 * points * ITERATIONS


def _spmv(inputs) -> tuple[float, float]:
    nonzeros, rows = inputs["vals"].size, inputs["x"].size
    return 2.0 * nonzeros, F32 * (2 * nonzeros + inputs["row_ptr"].size + 2 * rows)


def _blur(inputs) -> tuple[float, float]:
    pixels = inputs["img"].size
    return 6.0 * pixels, 2.0 * F32 * pixels


def _ms_gemm(inputs) -> tuple[float, float]:
    n = inputs["m1"].shape[0]
    return 2.0 * n ** 3, 8.0 * 3 * n * n


def _backprop(inputs) -> tuple[float, float]:
    inputs_, hidden = inputs["input_weights"].shape
    # layerforward: a multiply-add a weight; adjust_input: 5 a weight (ETA and
    # MOMENTUM terms, the update); reads the units, reads and writes both
    # weight matrices (the small layers are left out)
    return 7.0 * inputs_ * hidden, F32 * (inputs_ + 4 * inputs_ * hidden)


def _camera(inputs) -> tuple[float, float]:
    pixels = inputs["raw"].size
    # demosaic 14, denoise 3 x 14, colour 3 x 5, gamut 3 x 2, tone 3 x 6 a pixel;
    # the raw frame read, three output channels written
    return 95.0 * pixels, F32 * (pixels + 3 * pixels)


def _cfd(inputs) -> tuple[float, float]:
    from benchmarks.programs.cfd import ITERATIONS, RK
    cells = inputs["areas"].size
    # An iteration: the copy and the step factors (about 20 a cell) read the
    # 5 variables and the areas and write 5 + 1 values; each of RK stages
    # reads the variables, the 4 neighbours and 12 normals and writes the 5
    # variables (compute_flux, about 500 operations a cell over its four
    # faces, then time_step).  Memory-bound either way: the flops only set
    # the intensity.
    flops = ITERATIONS * cells * (20 + RK * 500)
    return flops, F32 * ITERATIONS * cells * (12 + RK * 26)


WORK: dict[str, Callable[[dict], tuple[float, float]]] = {
    "sgemm": _sgemm, "mriq": _mriq, "stencil": _stencil, "spmv": _spmv, "blur": _blur,
    "ms_gemm": _ms_gemm, "backprop": _backprop, "camera": _camera, "cfd": _cfd}
"""(floating-point operations, least bytes moved) of a program's run."""
FP64 = {"ms_gemm"}
"""Programs computing in f64 (bound by the FP64 peak)."""
PROGRAMS = {"gpu_opencl": "sgemm,mriq,stencil,spmv,blur", "cpu": "sgemm,ms_gemm,mriq"}


def event_seconds(queue, kernel, global_size, local_size, repeat: int) -> float:
    """The median of ``kernel``'s own time (profiling events) over
    ``repeat`` launches, after three to warm up; its arguments set."""
    import pyopencl as cl
    seconds = []
    for run in range(repeat + 3):
        event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
        event.wait()
        if run >= 3:
            seconds.append((event.profile.end - event.profile.start) * 1e-9)
    return statistics.median(seconds)


def copy_bandwidth(repeat: int, nbytes: int = 256 << 20, lanes: int = 4) -> float:
    """Bytes a second of a copy kernel over ``nbytes`` (read and write
    counted), ``lanes`` floats a work item (float4 by default), on the
    device gpu_opencl uses, on the kernel's own time (profiling events, as
    the nodes' own time is measured: a whole call's host time would add
    the launch, ~10% of the 256 MiB copy on an H200)."""
    import pyopencl as cl
    from benchmarks.peers import _opencl_device
    context, _ = _opencl_device()
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    element = "float" if lanes == 1 else f"float{lanes}"
    program = cl.Program(context, f"__kernel void copy(__global const {element}* restrict a, "
                                  f"__global {element}* restrict b) "
                                  "{ size_t i = get_global_id(0); b[i] = a[i]; }").build()
    a = cl.Buffer(context, cl.mem_flags.READ_ONLY, nbytes)
    b = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, nbytes)
    cl.enqueue_fill_buffer(queue, a, np.float32(1), 0, nbytes)
    kernel = cl.Kernel(program, "copy")
    kernel.set_args(a, b)
    return 2.0 * nbytes / event_seconds(queue, kernel, (nbytes // (4 * lanes),), None, repeat)


def cublas_rate(repeat: int) -> float | None:
    """FP32 operations a second of cuBLAS's 8192^3 product (TF32 off), or
    None without a CUDA GPU in PyTorch."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 8192
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")

    def run():
        torch.mm(a, b)
        torch.cuda.synchronize()
    return 2.0 * n ** 3 / (median_ms(run, repeat) / 1e3)


def host_peaks(repeat: int) -> tuple[float, float, float]:
    """(bytes a second of the cpu target's copy on every core over 256 MiB,
    read and write counted; FP32 and FP64 operations a second of numpy's
    BLAS on 2048^3)."""
    from hpvm_cpu.codegen.thread_pool import thread_pool
    pool = thread_pool()
    source = np.ones(64 << 20, np.float32)
    target = np.empty_like(source)
    bandwidth = 2.0 * source.nbytes / (median_ms(lambda: pool.copy(target, source),
                                                 repeat) / 1e3)
    rates = []
    for dtype in (np.float32, np.float64):
        a = np.random.default_rng(0).standard_normal((2048, 2048)).astype(dtype)
        rates.append(2.0 * 2048 ** 3 / (median_ms(lambda: a @ a, repeat) / 1e3))
    return bandwidth, rates[0], rates[1]


def compiled(bench, target: str, pipeline: str, options: dict, config=None):
    """``bench``'s program compiled for ``target``: after ``pipeline``, or
    with a tuned ``config`` (its options overridden by ``options``)."""
    import hpvm
    if config is not None:
        return hpvm.compile(bench.build(), [target], options, config=config)
    return hpvm.compile(bench.build(), [target],
                        {**options, "pipeline": pipeline} if pipeline else options)


def tuned_config(bench, inputs: dict, target: str, budget: int):
    """The best configuration ``hpvm.tune`` finds in ``budget`` samples
    (None where none was feasible)."""
    from hpvm.tune import tune
    objective = "node_seconds" if target == "gpu_opencl" else "seconds"
    program = bench.build()
    result = tune(program, [target], inputs, budget, objectives=[objective],
                  reference=bench.reference(inputs))
    print(f"{bench.name}: {result.summary()}", file=sys.stderr)
    return result.best


def hpvm_host_run(bench, inputs: dict, pipeline: str, threads: int | None, config=None,
                  bound: bool = False) -> tuple[Callable[[], None], Callable[[int], float]]:
    """A call of ``bench`` compiled for the cpu after ``pipeline`` (or
    with ``config``) from host arrays (``bound``: through ``exe.bind``);
    and a function measuring its nodes' own time."""
    exe = compiled(bench, "cpu", pipeline, {"threads": threads} if threads else {}, config)
    call = exe.bind(**inputs) if bound else lambda: exe(**inputs)
    for name, value in bench.reference(inputs).items():
        np.testing.assert_allclose(call()[name], value, rtol=bench.rtol, atol=bench.atol)
    return call, _nodes_ms(exe, call)


def hpvm_run(bench, inputs: dict, pipeline: str, config=None, bound: bool = False
             ) -> tuple[Callable[[], None], Callable[[int], float]]:
    """A device-resident call of ``bench`` compiled for gpu_opencl after
    ``pipeline`` (or with ``config``), waited for (``bound``: through
    ``exe.bind``); and a function measuring its nodes' own time."""
    exe = compiled(bench, "gpu_opencl", pipeline, {}, config)
    resident = {name: exe.device_array(value) if isinstance(value, np.ndarray) and value.ndim
                else value for name, value in inputs.items()}
    expected = exe(**inputs)
    call = exe.bind(**resident, outputs="device") if bound \
        else lambda: exe(**resident, outputs="device")
    got = call()
    for name, value in expected.items():
        np.testing.assert_allclose(got[name].get(), value, rtol=bench.rtol, atol=bench.atol)

    def run() -> None:
        outputs = call()
        for array in outputs.values():
            array.finish()
        next(iter(outputs.values())).queue.finish()
    return run, _nodes_ms(exe, run)


def _nodes_ms(exe, run: Callable[[], None]) -> Callable[[int], float]:
    """A function giving the nodes' own time (ms) of ``exe``, the median
    of ``repeat`` calls of ``run``."""
    def nodes(repeat: int) -> float:
        times = []
        for _ in range(repeat):
            run()
            times.append(exe.report().node_seconds * 1e3)
        return statistics.median(times)
    return nodes


def interleaved_ms(runs: list[Callable[[], None]], repeat: int) -> list[float]:
    """The median ms of each of ``runs``, warmed up as median_ms does and
    then called in turn ``repeat`` times, so that a disturbance of the
    machine falls on all of them alike."""
    for run in runs:
        median_ms(run, 1)
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(repeat):
        for run, own in zip(runs, times):
            began = time.perf_counter()
            run()
            own.append(time.perf_counter() - began)
    return [statistics.median(own) * 1e3 for own in times]


def kernels_ms(kernels: Callable[[], None], repeat: int) -> float | None:
    """The median of the hand-written kernels' own time (ms) over
    ``repeat`` runs, from profiling events; None where not profiled."""
    times = []
    for _ in range(repeat):
        kernels()
        seconds = kernels.kernel_seconds()
        if seconds is None:
            return None
        times.append(seconds * 1e3)
    return statistics.median(times)


def rows_of(name: str, size: str, pipelines: list[str], repeat: int, target: str = "gpu_opencl",
            threads: int | None = None, tune: int = 0, bound: bool = False) -> list[tuple]:
    """(program, implementation, ms, flops, bytes, nodes' own ms or None)
    rows of one program (``bound``: each hpvm row again, called through
    ``exe.bind``)."""
    bench = importlib.import_module(f"benchmarks.programs.{name}").BENCHMARKS[0]
    inputs = bench.make_inputs(size, np.random.default_rng(0))
    flops, nbytes = WORK[name](inputs)
    variants = [(f"hpvm, pipeline '{pipeline}'" if pipeline else "hpvm, as written", pipeline,
                 None) for pipeline in pipelines]
    config = tuned_config(bench, inputs, target, tune) if tune else None
    if config is not None:
        variants.append((f"hpvm, tuned ({tune} samples)", "", config))
    variants = [(label, pipeline, config, False) for label, pipeline, config in variants]
    if bound:
        variants += [(f"{label}, bound", pipeline, config, True)
                     for label, pipeline, config, _ in variants]
    runs = [hpvm_run(bench, inputs, pipeline, config, bound) if target == "gpu_opencl"
            else hpvm_host_run(bench, inputs, pipeline, threads, config, bound)
            for _, pipeline, config, bound in variants]
    calls = interleaved_ms([run for run, _ in runs], repeat)
    rows = [(name, variant[0], ms, flops, nbytes, nodes(repeat))
            for variant, ms, (_, nodes) in zip(variants, calls, runs)]
    for peer in bench.peers:
        if peer.available() is not None:
            continue
        if target == "gpu_opencl" and peer.prepare_kernels is not None:
            kernels = peer.prepare_kernels(inputs)
            rows.append((name, peer.name, median_ms(kernels, repeat), flops, nbytes,
                         kernels_ms(kernels, repeat)))
        elif target == "cpu" and "cpu" in peer.targets:
            rows.append((name, peer.name, median_ms(peer.prepare(inputs), repeat), flops,
                         nbytes, None))
    return rows


def format_rows(rows: list[tuple], bandwidth: float, fp32: float | None,
                fp64: float | None = None) -> list[str]:
    lines = ["| program | implementation | ms | nodes' own ms | GFLOP/s | GB/s | FLOP/byte | bound "
             "| of bound | of bound, own time |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for program, implementation, ms, flops, nbytes, nodes in rows:
        seconds = ms / 1e3
        intensity = flops / nbytes
        memory_bound = intensity * bandwidth
        precision, peak = ("FP64", fp64) if program in FP64 else ("FP32", fp32)
        if peak is None or memory_bound < peak:
            bound, limit = "memory", memory_bound
        else:
            bound, limit = precision, peak
        rate = flops / seconds
        own = "" if nodes is None else f"{nodes:.3f}"
        own_share = "" if not nodes else f"{flops / (nodes / 1e3) / limit:.2f}"
        lines.append(f"| {program} | {implementation} | {ms:.3f} | {own} | {rate / 1e9:.0f} | "
                     f"{nbytes / seconds / 1e9:.0f} | {intensity:.2f} | {bound} | "
                     f"{rate / limit:.2f} | {own_share} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="gpu_opencl", choices=tuple(PROGRAMS))
    parser.add_argument("--programs", default=None, help="comma-separated (default: the "
                        "target's: " + "; ".join(f"{t}: {p}" for t, p in PROGRAMS.items()) + ")")
    parser.add_argument("--size", default="large", choices=("small", "large"))
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None, help="the cpu's threads")
    parser.add_argument("--pipelines", default=",default",
                        help="comma-separated pass pipelines ('' : as written)")
    parser.add_argument("--tune", type=int, default=0, metavar="BUDGET",
                        help="also tune each program in BUDGET samples and time the best")
    parser.add_argument("--bound", action="store_true",
                        help="also time each hpvm row called through exe.bind (fixed inputs "
                        "and outputs)")
    args = parser.parse_args(argv)
    names = (args.programs or PROGRAMS[args.target]).split(",")
    unknown = [name for name in names if name not in WORK]
    if unknown:
        raise SystemExit(f"no work model for {', '.join(unknown)}; choose from {', '.join(WORK)}")
    if args.target == "cpu":
        bandwidth, fp32, fp64 = host_peaks(args.repeat)
        peaks = (f"peaks: the cpu's copy on every core {bandwidth / 1e9:.0f} GB/s; numpy's "
                 f"BLAS FP32 {fp32 / 1e9:.0f} GFLOP/s, FP64 {fp64 / 1e9:.0f} GFLOP/s")
    else:
        (bandwidth, fp32), fp64 = (copy_bandwidth(args.repeat), cublas_rate(args.repeat)), None
        peaks = (f"peaks: copy kernel {bandwidth / 1e9:.0f} GB/s; cuBLAS FP32 "
                 + (f"{fp32 / 1e12:.1f} TFLOP/s" if fp32 else "not measured (no CUDA in PyTorch)"))
    rows = [row for name in names
            for row in rows_of(name, args.size, args.pipelines.split(","), args.repeat,
                               args.target, args.threads, args.tune, args.bound)]
    print(f"command: python {shlex.join(sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    print(peaks)
    print("\n".join(format_rows(rows, bandwidth, fp32, fp64)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
