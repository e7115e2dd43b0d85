"""Calls whose inputs and outputs stay on the device (issue 41): a whole
call against its nodes' own time, beside the same call with host arrays.

    python benchmarks/device_io_bench.py [--repeat 50] [--cases blur,edge,sgemm,lenet,resnet]
        [--scale 1]

gpu_opencl (default options): blur 8192x8192 (examples/ir/blur.hpvm), the
edge pipeline 4096x4096 (hpvm.demo.edge_detection), sgemm 2048^3
(examples/ir/matmul.hpvm).  Inputs are made once with
``exe.device_array``; each call asks ``outputs="device"`` and finishes
the queue.  Nodes' own time: the node times of those calls'
reports (each kernel's own time, from OpenCL profiling events).  The
option ``asynchronous`` (launches queued with the DFG's dependencies as
events) gives a second row against the same nodes' time, and a bound
run (``exe.bind``: the inputs and outputs fixed once, every check skipped)
a third.

aten on CUDA: LeNet at batch 64 and 512, the ResNet block at batch 8 and
64 (the models of benchmarks/onnx_bench.py), run as one captured CUDA graph.
Inputs are CUDA tensors, ``outputs="device"``, each output held until the
next call returns (as a loop ``y = exe(x)`` holds it).  One input tensor
passed in every call is read where it is from the second call on; two
taking turns (the "inputs taking turns" row) each get a replay that reads
them where they are from their second call on (READ_IN_PLACE_WITHIN in
core/runtime/schedule_pool.py).  Nodes' own time: the captured graph's
replays alone, back to back, timed by CUDA events.  Calls
are timed synchronised after each call, and back to back with the GPU
synchronised once per 20 calls (what a pipeline of calls sees), plain and
as a bound run (``exe.bind``, one replay a call).

"host" rows: the same executable called with numpy arrays in and out.
Medians of ``--repeat``; ratio = call / nodes' own time.  Below the
table, for each aten case, the host CPU a call takes back to back: how
long the calls keep the host busy before the GPU is waited for (one tensor
passed again; bound; two taking turns): while it is below the nodes' own time,
calls back to back are bound by the GPU.
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OPENCL_CASES = ("blur", "edge", "sgemm")
ATEN_BATCHES = {"lenet": (64, 512), "resnet": (8, 64)}
ATEN_CASES = tuple(ATEN_BATCHES)
BACK_TO_BACK = 20
"""Calls per GPU synchronisation in the back-to-back timing."""


def median_time(call, finish, repeat: int, per: int = 1, host: list | None = None) -> float:
    """Median seconds of ``call`` (``per`` of them between two
    ``finish``es), after a warm-up; ``host`` gets the median seconds a call
    keeps the host busy (the calls alone, before ``finish``)."""
    call()
    finish()
    times, calls = [], []
    for _ in range(repeat):
        began = time.perf_counter()
        for _ in range(per):
            call()
        calls.append((time.perf_counter() - began) / per)
        finish()
        times.append((time.perf_counter() - began) / per)
    if host is not None:
        host.append(statistics.median(calls))
    return statistics.median(times)


def opencl_case(name: str, scale: int):
    """(program, host inputs, label); sizes divided by ``scale``."""
    from hpvm.ir.text import load_module
    rng = np.random.default_rng(0)
    if name == "blur":
        n = 8192 // scale
        return (load_module(ROOT / "examples" / "ir" / "blur.hpvm"),
                {"image": rng.random((n, n), dtype=np.float32)}, f"blur {n}x{n}")
    if name == "edge":
        from hpvm.demo.edge_detection import edge_detect
        n = 4096 // scale
        return (edge_detect, {"img": rng.random((n, n), dtype=np.float32),
                              "threshold": np.float32(0.3)}, f"edge {n}x{n}")
    n = 2048 // scale
    return (load_module(ROOT / "examples" / "ir" / "matmul.hpvm"),
            {"a": rng.standard_normal((n, n), dtype=np.float32),
             "b": rng.standard_normal((n, n), dtype=np.float32)}, f"sgemm {n}^3")


def run_opencl(name: str, repeat: int, scale: int) -> list[tuple]:
    import hpvm.runtime as rt
    program, inputs, label = opencl_case(name, scale)
    exe = rt.compile(program, targets=["gpu_opencl"])
    on_device = {k: exe.device_array(v) if isinstance(v, np.ndarray) and v.ndim else v
                 for k, v in inputs.items()}
    nodes, last = [], []

    def device_call(executable=exe):
        last[:] = executable(**on_device, outputs="device").values()
        nodes.append(executable.report().node_seconds)

    def finish():  # the outputs' last writers (kernel queues of their own), then the queue
        for array in last:
            array.finish()
        last[0].queue.finish()

    device = median_time(device_call, finish, repeat)
    own = statistics.median(nodes[1:])
    host = median_time(lambda: exe(**inputs), lambda: None, max(5, repeat // 4))
    expected = exe(**inputs)
    got = exe(**on_device, outputs="device")
    for key, value in expected.items():
        np.testing.assert_allclose(got[key].get(), value, rtol=1e-5, atol=1e-5)
    overlapped = rt.compile(program, targets=["gpu_opencl"], options={"asynchronous": True})
    asynchronous = median_time(lambda: device_call(overlapped), finish, repeat)
    run = exe.bind(**on_device, outputs="device")

    def bound_call():
        last[:] = run().values()
    bound = median_time(bound_call, finish, repeat)
    return [(f"gpu_opencl {label}", "device in/out, synchronised", device, own),
            (f"gpu_opencl {label}", "device in/out, bound (exe.bind)", bound, own),
            (f"gpu_opencl {label}", "device in/out, asynchronous launches", asynchronous, own),
            (f"gpu_opencl {label}", "host in/out (copies)", host, own)]


def run_aten(name: str, batch: int, repeat: int) -> tuple[list[tuple], str]:
    """(rows, a line saying the host CPU time a call takes back to back)."""
    import torch

    import hpvm.runtime as rt
    from benchmarks.onnx_bench import make_model
    from hpvm.frontend.onnx import load, testing
    model, shape, x = make_model(name, batch)
    exe = rt.compile(load(testing.export(model, shape)), targets=["aten"],
                     options={"device": "cuda"})
    tensor = torch.from_numpy(x).cuda()
    expected = exe(x=x)["y"]
    np.testing.assert_allclose(exe(x=tensor, outputs="device")["y"].cpu().numpy(), expected,
                               rtol=1e-4, atol=1e-4)
    schedules = exe._static_program().schedules.idle()
    replay = next(s.replay for s in schedules if s.replay is not None)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    owns = []
    for _ in range(repeat):
        start.record()
        for _ in range(BACK_TO_BACK):
            replay()
        end.record()
        end.synchronize()
        owns.append(start.elapsed_time(end) / 1e3 / BACK_TO_BACK)
    own = statistics.median(owns)

    held = {}
    turns = [tensor, tensor.clone()]

    def device_call():  # as a loop ``y = exe(x)`` does: the last output held meanwhile
        held["y"] = exe(x=tensor, outputs="device")["y"]

    def turns_call():  # two input tensors taking turns: each read by a replay of its own
        turns.reverse()
        held["y"] = exe(x=turns[0], outputs="device")["y"]
    run = exe.bind(x=tensor, outputs="device")
    np.testing.assert_allclose(run()["y"].cpu().numpy(), expected, rtol=1e-4, atol=1e-4)
    sync = torch.cuda.synchronize
    label = f"aten cuda {'LeNet' if name == 'lenet' else 'ResNet block'}, batch {batch}"
    host: list[float] = []
    rows = [(label, "device in/out, synchronised", median_time(device_call, sync, repeat), own),
            (label, "device in/out, back to back",
             median_time(device_call, sync, repeat, BACK_TO_BACK, host), own),
            (label, "device in/out, bound (exe.bind), back to back",
             median_time(run, sync, repeat, BACK_TO_BACK, host), own),
            (label, "device in/out, back to back, inputs taking turns",
             median_time(turns_call, sync, repeat, BACK_TO_BACK, host), own),
            (label, "host in/out (copies)", median_time(lambda: exe(x=x), sync, repeat), own)]
    one_tensor, bound, taking_turns = host
    return rows, (f"{label}: host CPU a call back to back, {one_tensor * 1e6:.1f} us (one "
                  f"tensor), {bound * 1e6:.1f} us (bound), {taking_turns * 1e6:.1f} us (two "
                  "taking turns)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--cases", default=",".join(OPENCL_CASES + ATEN_CASES))
    parser.add_argument("--scale", type=int, default=1,
                        help="divide the gpu_opencl sizes by this (a quick check without a GPU)")
    args = parser.parse_args(argv)
    rows, host_lines = [], []
    for name in args.cases.split(","):
        if name not in OPENCL_CASES + ATEN_CASES:
            raise SystemExit(f"unknown case '{name}'; choose from "
                             f"{', '.join(OPENCL_CASES + ATEN_CASES)}")
        if name in OPENCL_CASES:
            rows += run_opencl(name, args.repeat, args.scale)
        for batch in ATEN_BATCHES.get(name, ()):
            aten_rows, host_line = run_aten(name, batch, args.repeat)
            rows += aten_rows
            host_lines.append(host_line)
    print(f"command: python {shlex.join(sys.argv)}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus")
    print("| program | call | call ms | nodes' own ms | call / nodes |")
    print("| --- | --- | ---: | ---: | ---: |")
    for program, call, seconds, own in rows:
        print(f"| {program} | {call} | {seconds * 1e3:.3f} | {own * 1e3:.3f} | "
              f"{seconds / own:.2f} |")
    for line in host_lines:
        print(line)


if __name__ == "__main__":
    main()
