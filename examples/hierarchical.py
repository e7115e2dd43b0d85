"""Hierarchy: a ``task`` holding parallel loops is an internal node whose
child graph contains them.  Here the internal node ``smooth_scale`` has a
child graph of two nodes (a 3-point smoothing, then a scaling); a final
node outside adds the original signal back.

The same hierarchy built with the graph builder is ``builder_version()``.
"""
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, buffer, f32, instance_id, parallel_loop, task


@hl.program
def sharpen(x: Buffer[f32, "N"], y: Buffer[f32, "N"], amount: f32):
    detail = buffer(f32, ("N",))
    with task(ins=(x,), outs=(detail,), name="smooth_scale"):
        smooth = buffer(f32, ("N",))
        for i in parallel_loop(N, ins=(x,), outs=(smooth,), name="smooth"):
            left = x[i - 1] if i > 0 else x[i]
            right = x[i + 1] if i < N - 1 else x[i]
            smooth[i] = (left + x[i] + right) / 3
        for i in parallel_loop(N, ins=(x, smooth), outs=(detail,), name="scale"):
            detail[i] = (x[i] - smooth[i]) * amount
    for i in parallel_loop(N, ins=(x, detail), outs=(y,), name="add"):
        y[i] = x[i] + detail[i]


def make_inputs(rng):
    return {"x": rng.standard_normal(40, dtype=np.float32), "amount": np.float32(1.5)}


def reference(inputs):
    x = inputs["x"]
    p = np.pad(x, 1, mode="edge")
    smooth = (p[:-2] + p[1:-1] + p[2:]) / np.float32(3)
    return {"y": x + (x - smooth) * inputs["amount"]}


@hl.kernel
def double(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
    i = instance_id(0)
    y[i] = x[i] * 2


@hl.kernel
def increment(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
    i = instance_id(0)
    y[i] = x[i] + 1


def builder_version() -> hl.Graph:
    """y = (x * 2 + 1) * 2: an internal node (double, increment) then double."""
    inner = hl.Graph("inner")
    a = inner.leaf(double, replication=("N",))
    b = inner.leaf(increment, replication=("N",))
    inner.bind_in("x", a.inp("x"))
    inner.edge(a.out("y"), b.inp("x"))
    inner.bind_out(b.out("y"), "y")
    outer = hl.Graph("outer")
    child = outer.internal(inner, name="stage")
    last = outer.leaf(double, replication=("N",), name="final")
    outer.bind_in("x", child.inp("x"))
    outer.edge(child.out("y"), last.inp("x"))
    outer.bind_out(last.out("y"), "y")
    return outer


if __name__ == "__main__":
    inputs = make_inputs(np.random.default_rng(0))
    result = sharpen.run(**inputs)
    print("max error vs numpy:", np.abs(result["y"] - reference(inputs)["y"]).max())
    from hpvm.interp import run_module
    x = np.arange(5, dtype=np.float32)
    print("builder version:", run_module(builder_version().build(), {"x": x})["y"])
