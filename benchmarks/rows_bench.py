"""Reductions along rows with the elementwise ops around them (layer norm,
RMS norm, softmax and log-softmax, a row sum), each as one ONNX model:
hpvm with and without the pass ``fuse-rows`` against onnxruntime.

    .venv/bin/python benchmarks/rows_bench.py [--targets cpu,gpu_opencl]
        [--threads 16] [--repeat 20] [--batch 8]

hpvm cpu and onnxruntime rows are whole calls from host arrays (median);
gpu_opencl rows are the kernels' own time (profiling events) with the
input on the device, as the roofline bench measures.  Every result is
checked against onnxruntime's first.  Ratio: to onnxruntime (below 1:
faster).
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from hpvm.frontend.onnx import load
from hpvm.passes import TENSOR_PIPELINE, run_pipeline
from hpvm.runtime import compile
from hpvm.testing import usable_targets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.onnx_bench import median_ms, print_peer_rows  # noqa: E402

RNG = np.random.default_rng(0)


def model(nodes, shape, initializers=(), out_shape=None):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape or shape)
    graph = helper.make_graph(nodes, "g", [x], [y], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def tensor(name, array):
    return helper.make_tensor(name, TensorProto.FLOAT if array.dtype == np.float32
                              else TensorProto.INT64, array.shape, array.ravel())


def cases(batch: int = 8) -> dict:
    """Name -> single-purpose ONNX model; ``batch`` scales the leading axis
    (8: BERT-base's layer norms and attention softmaxes at batch 8)."""
    node = helper.make_node
    last = tensor("ax", np.array([-1], np.int64))
    scale = tensor("g", RNG.random(768).astype(np.float32))
    bias = tensor("b", RNG.random(768).astype(np.float32))
    eps = tensor("eps", np.array([1e-6], np.float32))
    softmax = [node("ReduceMax", ["x", "ax"], ["m"], keepdims=1), node("Sub", ["x", "m"], ["d"]),
               node("Exp", ["d"], ["e"]), node("ReduceSum", ["e", "ax"], ["s"], keepdims=1)]
    tokens, heads, rows = [batch, 128, 768], [batch, 12, 128, 128], 1536 * batch
    return {
        f"LayerNormalization {'x'.join(map(str, tokens))}": model(
            [node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], tokens, [scale, bias]),
        f"RMS norm by hand {'x'.join(map(str, tokens))}": model(
            [node("Mul", ["x", "x"], ["q"]), node("ReduceMean", ["q", "ax"], ["v"], keepdims=1),
             node("Add", ["v", "eps"], ["w"]), node("Sqrt", ["w"], ["r"]),
             node("Div", ["x", "r"], ["n"]), node("Mul", ["n", "g"], ["y"])],
            tokens, [last, eps, scale]),
        f"softmax by hand {'x'.join(map(str, heads))}": model(
            softmax + [node("Div", ["e", "s"], ["y"])], heads, [last]),
        f"Softmax {'x'.join(map(str, heads))}": model(
            [node("Softmax", ["x"], ["y"], axis=-1)], heads),
        f"LogSoftmax {128 * batch}x1000": model(
            [node("LogSoftmax", ["x"], ["y"], axis=-1)], [128 * batch, 1000]),
        f"ReduceSum rows {rows}x768": model(
            [node("ReduceSum", ["x", "ax"], ["y"], keepdims=1)], [rows, 768], [last], [rows, 1]),
    }


def kernel_ms(exe, x, repeat: int) -> float:
    """gpu_opencl: the kernels' own time, the input on the device."""
    resident = exe.device_array(x)
    times = []
    for _ in range(repeat + 3):
        exe(x=resident, outputs="device")["y"].finish()
        times.append(exe.report().node_seconds * 1e3)
    return statistics.median(times[3:])


def rows_of(name: str, onnx_model, targets: list[str], threads: int, repeat: int) -> list:
    shape = [d.dim_value for d in onnx_model.graph.input[0].type.tensor_type.shape.dim]
    x = RNG.standard_normal(shape).astype(np.float32)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(onnx_model.SerializeToString(), options)
    expected = session.run(None, {"x": x})[0]
    peer = median_ms(lambda: session.run(None, {"x": x}), repeat)
    rows = [(name, "onnxruntime", "", peer)]
    for fused in (False, True):
        pipeline = TENSOR_PIPELINE if fused else TENSOR_PIPELINE.replace(",fuse-rows", "")
        module = run_pipeline(load(onnx_model, optimize=False), pipeline)
        label = f"hpvm {'with' if fused else 'without'} fuse-rows"
        count = sum(hasattr(n.body, "op") for n in module.root_graph.nodes)
        nodes = f"{count} node{'s' if count != 1 else ''}"
        for target in targets:
            exe = compile(module, [target], {"threads": threads} if target == "cpu" else {})
            np.testing.assert_allclose(exe(x=x)["y"], expected, rtol=1e-4, atol=1e-5)
            ms = median_ms(lambda: exe(x=x), repeat) if target == "cpu" else \
                kernel_ms(exe, x, repeat)
            rows.append((name, f"{label}, {target}", nodes, ms))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="cpu,gpu_opencl")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8, help="the models' leading axis")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t in usable_targets()]
    print(f"command: {shlex.join([sys.executable, *sys.argv])}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads; "
          f"targets {', '.join(targets)}; onnxruntime {ort.__version__}\n")
    print("| model | implementation | nodes | ms | ratio to onnxruntime |")
    print("| --- | --- | --- | ---: | ---: |")
    for name, onnx_model in cases(args.batch).items():
        print_peer_rows(rows_of(name, onnx_model, targets, args.threads, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
