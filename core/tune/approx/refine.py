"""Install-time refinement: measure every shipped configuration's speed on
the machine at hand and keep those that are Pareto-optimal here.

    hpvm tune --refine model.hpvmx [--inputs in.npz]

Speed does not depend on the input values, so without ``inputs`` the runs
use random data of the shapes the curve was tuned on.  As in tuning, the
inputs are staged on the devices first and runs are timed without them.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from .curve import ApproxCurve, ApproxPoint
from .explore import Point, pareto
from .qos import ApproxError
from .tuner import machine


def refine(exe, inputs: dict | None = None, repeat: int = 5,
           progress: Callable[[str], None] | None = None) -> ApproxCurve:
    """The executable's curve re-measured here (and attached to it)."""
    if not exe.approximations:
        raise ApproxError("this executable ships no approximation curve (fix: make it with "
                          "hpvm approx)")
    curve = ApproxCurve.from_json(exe.approximations)
    inputs = inputs if inputs is not None else _random_inputs(curve, exe.module)
    in_use = exe.in_use
    times = []
    for index in range(len(curve.points)):
        exe.use(index)
        staged = exe.stage(**inputs)
        exe(**staged)
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            exe(**staged)
            runs.append(time.perf_counter() - started)
        times.append(statistics.median(runs))
        if progress is not None:
            progress(f"configuration {index}: {times[-1] * 1e3:.3g} ms")
    exe.use(0)
    kept = pareto([Point({"index": i}, p.qos, t) for i, (p, t) in
                   enumerate(zip(curve.points[1:], times[1:]), 1) if t < times[0]])
    points = [ApproxPoint({}, curve.points[0].qos, 1.0, times[0])]
    for point in reversed(kept):
        old = curve.points[point.config["index"]]
        points.append(ApproxPoint(old.knobs, old.qos, times[0] / point.seconds, point.seconds,
                                  old.predicted_qos, old.predicted_speedup))
    dropped = len(curve.points) - len(points)
    curve.points = points
    curve.machine = machine()
    curve.notes.append(f"refined on {curve.machine}: {dropped} configurations dropped")
    exe.attach_approximations(curve)
    if in_use < len(points):
        exe.use(in_use)
    return curve


def _random_inputs(curve: ApproxCurve, module) -> dict:
    """Random values in [0, 1) of the tuned shapes and the declared types."""
    if not curve.input_shapes:
        raise ApproxError("the curve does not record its input shapes (fix: give --inputs)")
    rng = np.random.default_rng(0)
    graph = module.root_graph
    return {name: rng.random(shape).astype(graph.param(name).type.element.numpy_dtype)
            for name, shape in curve.input_shapes.items()}
