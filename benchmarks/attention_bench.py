"""Multi-head attention as an ONNX model writes it (softmax(q @ k^T /
sqrt(d) + mask) @ v, 12 heads of 64), at growing sequence lengths: hpvm
cpu with the attention fused (one ``attention`` node, the scores a block
of rows at a time) and apart (``fuse_attention=False``: matmul, rowwise,
matmul), against onnxruntime.

    .venv/bin/python benchmarks/attention_bench.py [--lengths 128,512,1024,2048]
        [--batch 1] [--threads 16] [--repeat 10]

Whole calls from host arrays (median).  Every result is checked against
onnxruntime's.  "stored": the bytes of the intermediate tensors of the
scores' shape the program allocates (the scores and the probabilities
apart; none fused).  Ratio: to onnxruntime (below 1: faster).
"""
from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from hpvm.frontend.onnx import load
from hpvm.runtime import compile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.onnx_bench import median_ms, print_peer_rows  # noqa: E402

HEADS, DEPTH = 12, 64
PAUSE_S = 0.2
"""Idle time before onnxruntime's rows: its threads spin after each run
and slow whatever runs next."""


def attention_model(batch: int, length: int):
    """q, k, v [B, H, S, D] and an additive mask [B, 1, 1, S] -> y."""
    node = helper.make_node
    shape = [batch, HEADS, length, DEPTH]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, 1, 1, length]))
    scale = numpy_helper.from_array(np.array(np.sqrt(DEPTH), np.float32), "scale")
    nodes = [node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             node("MatMul", ["q", "kt"], ["s"]), node("Div", ["s", "scale"], ["scaled"]),
             node("Add", ["scaled", "mask"], ["masked"]),
             node("Softmax", ["masked"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["y"])]
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              [scale])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def inputs_of(batch: int, length: int, rng) -> dict:
    qkv = {n: rng.standard_normal((batch, HEADS, length, DEPTH)).astype(np.float32)
           for n in "qkv"}
    mask = np.where(rng.random((batch, 1, 1, length)) < 0.1, -1e4, 0).astype(np.float32)
    return {**qkv, "mask": mask}


def rows_of(batch: int, length: int, threads: int, repeat: int) -> list:
    """(case, implementation, stored MiB, ms) rows, onnxruntime's first."""
    model, inputs = attention_model(batch, length), inputs_of(batch, length,
                                                            np.random.default_rng(0))
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), options)
    expected = session.run(None, inputs)[0]
    case = f"S={length}, batch {batch}"
    time.sleep(PAUSE_S)
    rows = [(case, "onnxruntime", "", median_ms(lambda: session.run(None, inputs), repeat))]
    scores = batch * HEADS * length * length * 4 / 2 ** 20
    module = load(model)
    for fused in (True, False):
        exe = compile(module, ["cpu"], {"threads": threads, "fuse_attention": fused})
        np.testing.assert_allclose(exe(**inputs)["y"], expected, rtol=1e-4, atol=1e-5)
        rows.append((case, f"hpvm cpu, attention {'fused' if fused else 'apart'}",
                     "0" if fused else f"{2 * scores:.0f}", median_ms(lambda: exe(**inputs),
                                                                      repeat)))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="128,512,1024,2048")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    print(f"command: {shlex.join([sys.executable, *sys.argv])}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {args.threads} threads; "
          f"onnxruntime {ort.__version__}\n")
    print("| case | implementation | stored MiB | ms | ratio to onnxruntime |")
    print("| --- | --- | ---: | ---: | ---: |")
    for length in (int(n) for n in args.lengths.split(",")):
        print_peer_rows(rows_of(args.batch, length, args.threads, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
