"""Inputs padded once before a kernel: a strided convolution with padding
reads its input zero-padded by a kernel node the cpu lowering puts before
it (lower_tensor_nodes' PADS_INPUT_OF), which the device runs into a
buffer of its own while the runtime passes the unpadded input.  Checked
against the interpreter: launched node by node, as a bound schedule, fed
by a graph input and by another node, and saved and loaded."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir import F32, BufferType, Parameter
from hpvm.ir.graph import BindIn, BindOut, ConstantBody, Edge, Graph, Module, Node
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import evaluate_node, single_op_module, types_of
from hpvm.ir.verify import verify
from hpvm.passes.legalize_tensor_ops import PADS_INPUT_OF, lower_tensor_nodes, padded_inputs
from hpvm.runtime import Executable
from hpvm_cpu.target import register_tiles

STRIDED = {"stride": (2, 2), "padding": (1, 1, 1, 1), "activation": "relu"}


def arrays(seed, **shapes):
    rng = np.random.default_rng(seed)
    return {port: rng.standard_normal(shape).astype(np.float32) for port, shape in shapes.items()}


def conv_inputs(x=(2, 32, 15, 14), w=(64, 32, 3, 3)):
    return arrays(3, x=x, w=w, b=(w[0],))


def check_on_cpu(module, inputs, calls=3):
    """The cpu's results equal the interpreter's on ``calls`` calls (the
    first launches nodes one by one, later ones run a bound schedule)."""
    expected = run_module(module, inputs)["y"]
    exe = hpvm.compile(module, targets=["cpu"], options={"threads": 2})
    for _ in range(calls):
        np.testing.assert_allclose(exe(**inputs)["y"], expected, rtol=1e-4, atol=1e-4)
    return exe


def test_a_strided_padded_convolution_reads_its_input_padded_by_a_kernel_before_it():
    inputs = conv_inputs()
    module = single_op_module("conv2d", inputs, STRIDED, constants=("w", "b"))
    lowered = lower_tensor_nodes(module, lambda node: True, register_tiles(512, 2),
                                 relayout=True, pad_inputs=True)
    verify(lowered)
    graph = lowered.root_graph
    before = padded_inputs(graph, "op")["x"]
    assert before.attributes[PADS_INPUT_OF] == "op"
    assert graph.bind_ins == (BindIn("x", before.name, "x"),)  # the graph input pads first
    padded = next(p for p in lowered.functions[graph.node("op").body.function].params
                  if p.name == "x")
    assert padded.type.shape == (2, 32, 17, 16)


def test_without_pad_inputs_the_lowering_pads_in_its_kernel():
    inputs = conv_inputs()
    module = single_op_module("conv2d", inputs, STRIDED, constants=("w", "b"))
    lowered = lower_tensor_nodes(module, lambda node: True, register_tiles(512, 2),
                                 relayout=True)
    assert not padded_inputs(lowered.root_graph, "op")
    assert len(lowered.root_graph.nodes) == len(module.root_graph.nodes) + 1  # packed weights


@pytest.mark.parametrize("x, w, attrs", [
    ((2, 32, 15, 14), (64, 32, 3, 3), STRIDED),
    ((1, 48, 9, 12), (40, 48, 3, 3), {"stride": (2, 3), "padding": (0, 1, 2, 1)}),
    ((1, 16, 20, 20), (32, 16, 5, 5), {"stride": (2, 2), "padding": (2, 2, 2, 2),
                                        "dilation": (2, 1)}),
])
def test_padded_inputs_on_cpu_match_the_interpreter(x, w, attrs):
    inputs = conv_inputs(x, w)
    module = single_op_module("conv2d", inputs, attrs, constants=("w", "b"))
    exe = check_on_cpu(module, {"x": inputs["x"]})
    assert padded_inputs(exe.artifacts["cpu"].live["module"].root_graph, "op")


def test_a_convolution_fed_by_a_node_and_given_a_summand_pads_its_input_each_call():
    inputs = conv_inputs()
    x_type = BufferType(F32, inputs["x"].shape)
    act = tensor_node("act", "relu", {"x": x_type})
    conv_types = {**types_of(**inputs), "x": x_type}
    y_type = get_op("conv2d").infer(conv_types, STRIDED)["y"]
    conv = tensor_node("op", "conv2d", {**conv_types, "z": y_type}, STRIDED)
    constants = [Node(f"{p}_const", ConstantBody(BufferType(F32, inputs[p].shape), inputs[p]))
                 for p in ("w", "b")]
    graph = Graph("main", (Parameter("x", x_type, "in"), Parameter("z", y_type, "in"),
                           Parameter("y", y_type, "out")),
                  (act, conv, *constants),
                  (Edge("act", "y", "op", "x"), Edge("w_const", "value", "op", "w"),
                   Edge("b_const", "value", "op", "b")),
                  (BindIn("x", "act", "x"), BindIn("z", "op", "z")), (BindOut("op", "y", "y"),))
    module = Module("m", {}, {"main": graph}, "main")
    verify(module)
    exe = hpvm.compile(module, targets=["cpu"], options={"threads": 2})
    assert padded_inputs(exe.artifacts["cpu"].live["module"].root_graph, "op")
    for seed in range(3):  # new inputs each call: the padded copy is made again
        fed = arrays(seed, x=x_type.shape, z=y_type.shape)
        relu = np.maximum(fed["x"], 0)
        expected = evaluate_node(conv, {**inputs, "x": relu, "z": fed["z"]})["y"]
        np.testing.assert_allclose(exe(**fed)["y"], expected, rtol=1e-4, atol=1e-4)


def test_a_padded_input_of_symbolic_batch_takes_each_call_s_batch():
    """The padded buffer's batch is the input's, call by call."""
    inputs = conv_inputs()
    x_type = BufferType(F32, ("N",) + inputs["x"].shape[1:])
    types = {**types_of(**inputs), "x": x_type}
    conv = tensor_node("op", "conv2d", types, STRIDED)
    y_type = next(p.type for p in conv.body.params if p.name == "y")
    constants = [Node(f"{p}_const", ConstantBody(BufferType(F32, inputs[p].shape), inputs[p]))
                 for p in ("w", "b")]
    graph = Graph("main", (Parameter("x", x_type, "in"), Parameter("y", y_type, "out")),
                  (conv, *constants),
                  (Edge("w_const", "value", "op", "w"), Edge("b_const", "value", "op", "b")),
                  (BindIn("x", "op", "x"),), (BindOut("op", "y", "y"),))
    module = Module("m", {}, {"main": graph}, "main")
    exe = hpvm.compile(module, targets=["cpu"], options={"threads": 2})
    assert padded_inputs(exe.artifacts["cpu"].live["module"].root_graph, "op")
    for batch in (3, 1, 3):
        x = arrays(batch, x=(batch,) + inputs["x"].shape[1:])["x"]
        expected = evaluate_node(conv, {**inputs, "x": x})["y"]
        np.testing.assert_allclose(exe(x=x)["y"], expected, rtol=1e-4, atol=1e-4)


def test_a_saved_executable_with_padded_inputs_loads_and_runs(tmp_path):
    inputs = conv_inputs()
    module = single_op_module("conv2d", inputs, STRIDED, constants=("w", "b"))
    exe = check_on_cpu(module, {"x": inputs["x"]}, calls=1)
    exe.save(tmp_path / "conv.hpvmx")
    loaded = Executable.load(tmp_path / "conv.hpvmx")
    np.testing.assert_allclose(loaded(x=inputs["x"])["y"],
                               run_module(module, {"x": inputs["x"]})["y"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("x, pads, dtype", [
    ((2, 3, 5, 7), (0, 1, 2, 3, 0, 2, 1, 0), np.float32),   # a border on three axes
    ((4, 9), (1, 0, 0, 2), np.int32),
    ((3, 1, 6), (0, 0, 0, 0, 0, 0), np.float32),             # nothing padded
])
def test_constant_padding_on_cpu_matches_evaluate(x, pads, dtype):
    """Rows of the border, rows of x between leading and trailing values."""
    data = (np.random.default_rng(5).standard_normal(x) * 10).astype(dtype)
    attrs = {"pads": pads, "mode": "constant", "value": 2.0}
    module = single_op_module("pad", {"x": data}, attrs)
    exe = hpvm.compile(module, targets=["cpu"], options={"threads": 2})
    expected = get_op("pad").evaluate({"x": data}, attrs)["y"]
    np.testing.assert_array_equal(exe(x=data)["y"], expected)
