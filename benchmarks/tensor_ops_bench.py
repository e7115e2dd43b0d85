"""conv2d and gemm, one tensor op at a time: the cpu target's lowered kernel
against onnxruntime's kernel for the same single-node ONNX model, in the same
run.  Shapes: the LeNet and ResNet-block layers at batch 64.

    .venv/bin/python benchmarks/tensor_ops_bench.py [--threads 1] [--repeat 9] [--only conv]

hpvm rows time ``CompiledKernel.run`` (argument packing included, no graph
runtime) of the kernel the cpu target makes (its register tiles and vector
width for this machine); onnxruntime rows time ``session.run`` with ``intra_op_num_threads``
set to the same thread count.  Both results are checked against the op's
numpy reference first.  Ratio = hpvm / onnxruntime (below 1: hpvm faster).
"""
from __future__ import annotations

import argparse
import statistics
import time
import timeit

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from hpvm.errors import Location
from hpvm.ir.shapes import bind_symbols, replication_sizes
from hpvm.ir.tensor_ops import tensor_node
from hpvm.ir.tensor_ops.testing import evaluate_node, lowered_module, types_of
from hpvm_cpu.codegen import compile_kernel_node
from hpvm_cpu.codegen.machine import MachineSpec
from hpvm_cpu.target import register_tiles

BATCH = 64
RNG = np.random.default_rng(0)


PAUSE_S = 0.2
"""Idle time before each implementation is timed, so that the other's
threads have stopped spinning (onnxruntime's spin after each run, and
took cores from hpvm's 16 threads right after it)."""


def median_s(run, repeat: int) -> float:
    time.sleep(PAUSE_S)
    run()  # warm-up
    return statistics.median(timeit.repeat(run, number=1, repeat=repeat))


def random(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def conv_case(name, channels, size, features, kernel, pad, stride=1):
    inputs = {"x": random(BATCH, channels, size, size),
              "w": random(features, channels, kernel, kernel), "b": random(features)}
    attrs = {"padding": (pad,) * 4, "stride": (stride, stride)}
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[pad] * 4, strides=[stride] * 2)
    return name, "conv2d", inputs, attrs, node


def gemm_case(name, k, n, trans_b):
    inputs = {"a": random(BATCH, k), "b": random(n, k) if trans_b else random(k, n),
              "c": random(n)}
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=int(trans_b))
    return name, "gemm", inputs, {"trans_b": trans_b}, node


CASES = [
    conv_case("LeNet conv1 1->6 5x5, 28x28, pad 2", 1, 28, 6, 5, 2),
    conv_case("LeNet conv2 6->16 5x5, 14x14", 6, 14, 16, 5, 0),
    gemm_case("LeNet fc1 400->120 (Gemm transB)", 400, 120, True),
    gemm_case("LeNet fc2 120->84 (Gemm transB)", 120, 84, True),
    gemm_case("LeNet fc3 84->10 (Gemm transB)", 84, 10, True),
    gemm_case("fc 400->120 (B as [K, N])", 400, 120, False),
    conv_case("ResNet 3x3 16->16, 32x32, pad 1", 16, 32, 16, 3, 1),
    conv_case("ResNet 3x3 32->32, 32x32, pad 1", 32, 32, 32, 3, 1),
    conv_case("ResNet 3x3 64->64, 16x16, pad 1", 64, 16, 64, 3, 1),
    conv_case("ResNet 3x3 16->32 stride 2, 32x32", 16, 32, 32, 3, 1, 2),
]


def onnxruntime_session(node, inputs: dict, output_shape, threads: int):
    graph = helper.make_graph(
        [node], "op",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)  # onnx's newest may be past onnxruntime's
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def bench_case(case, threads: int, repeat: int) -> tuple[float, float, float]:
    """(hpvm s, onnxruntime s, hpvm GFLOP/s) after checking both results."""
    _, op, inputs, attrs, onnx_node = case
    node = tensor_node("t", op, types_of(**inputs), attrs)
    bits = MachineSpec.host().vector_bits()  # as the cpu target lowers and compiles it
    module, function, replication = lowered_module(node, register_tiles(bits))
    kernel = compile_kernel_node(module, function, len(replication),
                                 {"threads": threads, "vector_width": bits})
    sizes = replication_sizes(replication, bind_symbols(node.body.params, inputs, Location(node="t")))
    expected = evaluate_node(node, inputs)["y"]
    args = dict(inputs, y=np.zeros_like(expected))
    kernel.run(args, sizes)
    np.testing.assert_allclose(args["y"], expected, rtol=1e-3, atol=1e-3)
    session = onnxruntime_session(onnx_node, inputs, expected.shape, threads)
    np.testing.assert_allclose(session.run(None, inputs)[0], expected, rtol=1e-3, atol=1e-3)
    reduction = inputs["w"][0].size if op == "conv2d" else inputs["a"].shape[1]
    hpvm_s = median_s(lambda: kernel.run(args, sizes), repeat)
    ort_s = median_s(lambda: session.run(None, inputs), repeat)
    return hpvm_s, ort_s, 2 * expected.size * reduction / hpvm_s / 1e9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--only", default="", help="only the cases whose name contains this")
    args = parser.parse_args(argv)
    print(f"batch {BATCH}, threads {args.threads}, repeat {args.repeat}")
    print("| op | hpvm ms | onnxruntime ms | ratio | hpvm GFLOP/s |\n| --- | ---: | ---: | ---: | ---: |")
    for case in CASES:
        if args.only in case[0]:
            hpvm_s, ort_s, rate = bench_case(case, args.threads, args.repeat)
            print(f"| {case[0]} | {hpvm_s * 1e3:.3f} | {ort_s * 1e3:.3f} | {hpvm_s / ort_s:.2f} "
                  f"| {rate:.2f} |", flush=True)


if __name__ == "__main__":
    main()
