"""ONNX models on hpvm (targets cpu, aten, movidius) against onnxruntime,
PyTorch and OpenVINO, in the same run: a LeNet-5 (1x28x28) and a ResNet basic block
(32 channels, 16x16: the second stage of a CIFAR ResNet), batch 64, FP32.

    .venv/bin/python benchmarks/onnx_bench.py [--models lenet,resnet] [--repeat 20]
        [--batch 64] [--threads N] [--targets cpu,aten,movidius] [--fp16] [--device cpu|cuda]
        [--torch-compile MODE] [--json out.json]

The models are made here (hpvm.frontend.onnx.testing, random weights with
a fixed seed) and exported with torch.onnx.export; hpvm imports them with
its default fusion (hpvm.passes.TENSOR_PIPELINE).  Each implementation
warms up for half a second (JIT compiles and session creation are not
timed), then runs ``--repeat`` times on the same input; the table gives
the median.
hpvm rows time ``exe(x=batch)``, the whole executable call.  Ratio = this
row's time / onnxruntime's (below 1: faster than onnxruntime).  The error
is max |out - torch| / max |torch|.  Every implementation gets ``--threads``
threads (default: all cores).  ``--device cuda`` runs aten and the torch
peer on the GPU; both are timed from host input to host output, as
``exe(x=batch)`` is; there aten also runs without CUDA graphs (option
``cuda_graphs=False``: one launch per node), and ``--torch-compile MODE``
adds torch.compile as the stronger peer.  With target movidius, OpenVINO used directly on the
same ONNX file (CPU device, latency hint, FP32, ``--threads``) is a peer too, and
the movidius row's note gives its ratio to it: the cost of going through
hpvm.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

MODELS = ("lenet", "resnet")


@dataclass
class Row:
    model: str
    implementation: str
    median_ms: float
    error: float | None
    note: str = ""


WARM_UP_S = 0.5
"""Each implementation runs for this long before it is timed, not once:
on the 2-core VM the first tenth of a second after hpvm's compile ran 2x
slower in three runs of one afternoon (later runs did not show it)."""


def print_peer_rows(rows: list) -> None:
    """Markdown rows (case, implementation, note, ms) with each ms's ratio
    to the first row's (the peer's)."""
    for case, implementation, note, ms in rows:
        print(f"| {case} | {implementation} | {note} | {ms:.3f} | {ms / rows[0][3]:.2f} |",
              flush=True)


def median_ms(run: Callable[[], object], repeat: int) -> float:
    began = time.perf_counter()
    run()
    while time.perf_counter() - began < WARM_UP_S:
        run()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3


def make_model(name: str, batch: int, seed: int = 0):
    """(torch model, input shape without the batch, example input)."""
    import torch
    from hpvm.frontend.onnx import testing
    torch.manual_seed(seed)
    if name == "lenet":
        model, shape = testing.lenet(), (1, 28, 28)
    elif name == "resnet":
        model, shape = testing.resnet_block(32), (32, 16, 16)
    else:
        raise SystemExit(f"unknown model '{name}'; choose from {', '.join(MODELS)}")
    x = np.random.default_rng(seed).standard_normal((batch,) + shape).astype(np.float32)
    return model, shape, x


def torch_runner(model, x: np.ndarray, device: str = "cpu", mode: str | None = None,
                 tf32: bool = True):
    """Host input to host output (a copy each way on a GPU); with ``mode``
    the model goes through ``torch.compile(mode=...)`` first (compiled by
    the first call, which median_ms does not time).  ``tf32`` False: on
    CUDA, cuDNN's and cuBLAS's TF32 tensor cores are off (PyTorch allows
    them for convolutions by default), so that the model computes in
    FP32 as hpvm's exact nodes do."""
    import torch
    model = model.to(device)
    if mode is not None:
        model = torch.compile(model, mode=mode)
    tensor = torch.from_numpy(x)
    backends = torch.backends

    def run():
        allowed = backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32
        if not tf32:
            backends.cudnn.allow_tf32 = backends.cuda.matmul.allow_tf32 = False
        try:
            with torch.no_grad():
                return model(tensor.to(device)).cpu().numpy()
        finally:
            backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32 = allowed
    return run


def onnxruntime_runner(proto, x: np.ndarray, threads: int):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return lambda: session.run(None, {"x": x})[0]


OPENVINO = "openvino (direct, CPU)"


def openvino_runner(proto, x: np.ndarray, threads: int):
    """The ONNX model read and compiled by OpenVINO itself, host in, host
    out, in FP32 as every other row (OpenVINO's own default is bf16 on
    CPUs with AMX)."""
    import openvino as ov
    core = ov.Core()
    model = core.read_model(proto.SerializeToString(), ov.Tensor(np.zeros(0, np.uint8)))
    compiled = core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY",
                                                 "INFERENCE_NUM_THREADS": threads,
                                                 "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    return lambda: request.infer({"x": x}, share_inputs=True)[0].copy()


def hpvm_runner(module, target: str, options: dict, x: np.ndarray):
    from hpvm.runtime import compile
    began = time.perf_counter()
    exe = compile(module, [target], options)
    exe(x=x[:1])  # loads the artifacts (JIT) outside the timing
    seconds = time.perf_counter() - began
    return (lambda: exe(x=x)["y"]), seconds


def relative_error(out: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(out - reference).max() / max(np.abs(reference).max(), 1e-30))


def bench_model(name: str, args) -> list[Row]:
    from hpvm.frontend.onnx import load, testing
    model, shape, x = make_model(name, args.batch)
    proto = testing.export(model, shape)
    reference = torch_runner(model, x)()
    module = load(proto)
    runners: list[tuple[str, Callable, str]] = []
    for target in args.targets:
        variants = [("fp32", {})] + ([("fp16", {"precision": "fp16"})]
                                     if args.fp16 and target == "aten" else [])
        if target == "aten" and args.device.startswith("cuda"):
            variants.append(("launches, no CUDA graph", {"cuda_graphs": False}))
        for label, extra in variants:
            options = {**extra,
                       **({"threads": args.threads} if target in ("cpu", "movidius") else {}),
                       **({"device": args.device} if target == "aten" else {})}
            run, seconds = hpvm_runner(module, target, options, x)
            suffix = f" {label}" if label != "fp32" else ""
            where = f" {args.device}" if target == "aten" and args.device != "cpu" else ""
            runners.append((f"hpvm {target}{where}{suffix}", run, f"compile {seconds:.1f} s"))
    runners.append(("onnxruntime", onnxruntime_runner(proto, x, args.threads), ""))
    if "movidius" in args.targets:
        runners.append((OPENVINO, openvino_runner(proto, x, args.threads), ""))
    where = "" if args.device == "cpu" else f", {args.device}"
    runners.append((f"torch (eager, no_grad{where})", torch_runner(model, x, args.device), ""))
    if args.torch_compile:
        runners.append((f"torch.compile ({args.torch_compile}{where})",
                        torch_runner(model, x, args.device, args.torch_compile), ""))
    rows = []
    for label, run, note in runners:
        error = relative_error(np.asarray(run()), reference)
        rows.append(Row(name, label, median_ms(run, args.repeat), error, note))
    direct = next((r.median_ms for r in rows if r.implementation == OPENVINO), None)
    for row in rows:
        if row.implementation == "hpvm movidius" and direct:
            row.note += f"; {row.median_ms / direct:.2f}x OpenVINO direct"
    return rows


def format_table(rows: list[Row]) -> str:
    lines = ["| model | implementation | median ms | ratio to onnxruntime | rel. error | note |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    for model in dict.fromkeys(r.model for r in rows):
        mine = [r for r in rows if r.model == model]
        peer = next(r.median_ms for r in mine if r.implementation == "onnxruntime")
        for r in mine:
            lines.append(f"| {model} | {r.implementation} | {r.median_ms:.3f} | "
                         f"{r.median_ms / peer:.2f} | {r.error:.1e} | {r.note} |")
    return "\n".join(lines)


def machine() -> str:
    import onnxruntime
    import torch
    gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return (f"{platform.machine()}, {os.cpu_count()} cores visible{gpu}, Python "
            f"{platform.python_version()}, torch {torch.__version__}, onnxruntime "
            f"{onnxruntime.__version__}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, from {', '.join(MODELS)}")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--targets", default="cpu,aten", help="hpvm targets, comma-separated")
    parser.add_argument("--fp16", action="store_true", help="also aten with precision=fp16")
    parser.add_argument("--device", default="cpu", help="aten's and torch's device (cpu, cuda)")
    parser.add_argument("--torch-compile", metavar="MODE", default=None,
                        help="also torch.compile(model, mode=MODE): default, reduce-overhead "
                             "(CUDA graphs), max-autotune")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    return args


def main(argv=None) -> int:
    import torch
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = [row for name in args.models for row in bench_model(name, args)]
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/onnx_bench.py",
                                                 *(sys.argv[1:] if argv is None else argv)])
    print(f"command: {command}")
    print(f"machine: {machine()}; batch {args.batch}, {args.threads} threads, "
          f"median of {args.repeat}")
    print()
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as out:
            json.dump([r.__dict__ for r in rows], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
