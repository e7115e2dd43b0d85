"""A 3-stage streaming pipeline built with the graph builder (the HPVM-C
idea: every node, edge and binding spelled out).

    frame -> scale (x * gain) -> offset (+ bias) -> clip (to [0, 1]) -> result

Streaming edges and bindings carry a sequence of frames: ``start`` fixes
the non-streaming inputs, each ``push`` runs the pipeline on one frame,
``pop`` returns the results in push order.
"""
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f32, instance_id


@hl.kernel
def scale(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]], gain: f32):
    i = instance_id(0)
    y[i] = x[i] * gain


@hl.kernel
def offset(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]], bias: f32):
    i = instance_id(0)
    y[i] = x[i] + bias


@hl.kernel
def clip(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
    i = instance_id(0)
    y[i] = min(max(x[i], 0.0), 1.0)


def pipeline() -> hl.Graph:
    g = hl.Graph("pipeline")
    s1 = g.leaf(scale, replication=("N",))
    s2 = g.leaf(offset, replication=("N",), hint="gpu")
    s3 = g.leaf(clip, replication=("N",))
    g.bind_in("frame", s1.inp("x"), streaming=True)
    g.bind_in("gain", s1.inp("gain"))
    g.bind_in("bias", s2.inp("bias"))
    g.edge(s1.out("y"), s2.inp("x"), kind="one-to-one", streaming=True)
    g.edge(s2.out("y"), s3.inp("x"), kind="one-to-one", streaming=True)
    g.bind_out(s3.out("y"), "result", streaming=True)
    return g


def make_frames(rng, count=10, size=64):
    return [{"frame": rng.standard_normal(size, dtype=np.float32)} for _ in range(count)]


FIXED = {"gain": np.float32(0.5), "bias": np.float32(0.25)}


def reference_frame(frame, gain=FIXED["gain"], bias=FIXED["bias"]):
    return {"result": np.clip(frame * gain + bias, 0, 1)}


if __name__ == "__main__":
    from hpvm.interp import Interpreter
    frames = make_frames(np.random.default_rng(0))
    run = Interpreter(pipeline().build())
    run.start(**FIXED)
    for frame in frames:
        run.push(**frame)
    errors = [np.abs(run.pop()["result"] - reference_frame(f["frame"])["result"]).max() for f in frames]
    print("frames:", len(errors), "max error:", max(errors))
