"""Streaming pipelines: start, push, pop, close."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    F32, I64, BindIn, BindOut, BufferType, Edge, Graph, InstanceId, KernelBody,
    KernelFunction, Load, Module, Node, Parameter, Store, Var,
)
from hpvm.interp import Interpreter

I = InstanceId(0)
FRAME = BufferType(F32, ("N",))


def stage(name, compute, extra=()):
    params = (Parameter("x", FRAME),) + tuple(extra) + (Parameter("y", FRAME, "out"),)
    return KernelFunction(name, params, (Store("y", (I,), compute(Load("x", (I,), F32))),))


def pipeline_module():
    """frame -> scale by gain -> add bias[i] -> square, gain and bias fixed."""
    functions = {
        "scale": stage("scale", lambda x: x * Var("gain", F32), (Parameter("gain", F32),)),
        "shift": stage("shift", lambda x: x + Load("bias", (I,), F32),
                       (Parameter("bias", FRAME),)),
        "square": stage("square", lambda x: x * x),
    }
    rep = (Var("N", I64),)
    graph = Graph(
        "pipeline",
        (Parameter("frame", FRAME), Parameter("gain", F32), Parameter("bias", FRAME),
         Parameter("result", FRAME, "out")),
        tuple(Node(n, KernelBody(n), rep) for n in functions),
        edges=(Edge("scale", "y", "shift", "x", streaming=True),
               Edge("shift", "y", "square", "x", streaming=True)),
        bind_ins=(BindIn("frame", "scale", "x", streaming=True),
                  BindIn("gain", "scale", "gain"), BindIn("bias", "shift", "bias")),
        bind_outs=(BindOut("square", "y", "result", streaming=True),))
    return Module("pipeline", functions, {"pipeline": graph}, "pipeline")


BIAS = np.array([1, 2, 3], np.float32)


def started():
    interpreter = Interpreter(pipeline_module())
    interpreter.start(gain=2.0, bias=BIAS)
    return interpreter


def test_ten_pushed_frames_pop_in_order():
    interpreter = started()
    frames = [np.full(3, k, np.float32) for k in range(10)]
    for frame in frames:
        interpreter.push(frame=frame)
    for frame in frames:
        np.testing.assert_array_equal(interpreter.pop()["result"], (frame * 2 + BIAS) ** 2)
    interpreter.close()


def test_streaming_inputs_are_the_streaming_bindings():
    assert Interpreter(pipeline_module()).streaming_inputs == ("frame",)


def test_pop_without_a_pushed_frame_is_an_error():
    with pytest.raises(ExecutionError, match="pop\\(\\) with no pushed frame"):
        started().pop()


def test_push_before_start_is_an_error():
    with pytest.raises(ExecutionError, match="push\\(\\) before start\\(\\)"):
        Interpreter(pipeline_module()).push(frame=np.zeros(3, np.float32))


def test_start_rejects_a_streaming_input():
    with pytest.raises(ExecutionError, match="'frame' is a streaming input"):
        Interpreter(pipeline_module()).start(gain=1.0, bias=BIAS, frame=BIAS)


def test_start_requires_every_fixed_input():
    with pytest.raises(ExecutionError, match="missing input 'bias'"):
        Interpreter(pipeline_module()).start(gain=1.0)


def test_push_rejects_a_fixed_input():
    with pytest.raises(ExecutionError, match="'gain' is not a streaming input"):
        started().push(frame=BIAS, gain=3.0)


def test_push_checks_the_frame_against_the_fixed_inputs():
    with pytest.raises(ExecutionError, match="size 'N'"):
        started().push(frame=np.zeros(4, np.float32))


def test_push_after_close_is_an_error():
    interpreter = started()
    interpreter.close()
    with pytest.raises(ExecutionError, match="closed"):
        interpreter.push(frame=BIAS)
