"""Running dataflow graphs: ordering, value semantics, hierarchy,
constants, tensor ops."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    F32, I64, Assign, BindIn, BindOut, BufferType, Const, ConstantBody, Edge, For, Graph,
    GraphBody, InstanceId, Intrinsic, KernelBody, KernelFunction, Let, Load, Module,
    Node, Parameter, Store, Var,
)
from hpvm.interp import run_module

I, J = InstanceId(0), InstanceId(1)
RNG = np.random.default_rng(3)


def buffer(name, dims, direction="in", element=F32):
    return Parameter(name, BufferType(element, dims), direction)


def node(name, function, replication=()):
    return Node(name, KernelBody(function), tuple(replication))


MATMUL = KernelFunction(
    "matmul",
    (buffer("a", ("M", "K")), buffer("b", ("K", "N")), buffer("c", ("M", "N"), "out")),
    (Let("acc", F32, Const(0.0, F32)),
     For("k", Const(0, I64), Var("K", I64), 1, (
         Assign("acc", Var("acc", F32) + Load("a", (I, Var("k", I64)), F32)
                * Load("b", (Var("k", I64), J), F32)),)),
     Store("c", (I, J), Var("acc", F32))))


def matmul_module():
    graph = Graph(
        "main", (buffer("a", ("M", "K")), buffer("b", ("K", "N")), buffer("c", ("M", "N"), "out")),
        (node("mm", "matmul", (Var("M", I64), Var("N", I64))),),
        bind_ins=(BindIn("a", "mm", "a"), BindIn("b", "mm", "b")),
        bind_outs=(BindOut("mm", "c", "c"),))
    return Module("matmul", {"matmul": MATMUL}, {"main": graph}, "main")


def test_matmul_graph_matches_numpy():
    a = RNG.normal(size=(7, 5)).astype(np.float32)
    b = RNG.normal(size=(5, 9)).astype(np.float32)
    c = run_module(matmul_module(), {"a": a, "b": b})["c"]
    assert c.shape == (7, 9) and c.dtype == np.float32
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def blur_function(name, axis):
    """3-tap box blur along ``axis`` (0: rows, 1: columns), edges clamped."""
    limit = Var("H" if axis == 0 else "W", I64) - 1
    total = None
    for offset in (-1, 0, 1):
        moved = Intrinsic("min", (Intrinsic("max", ((I if axis == 0 else J) + offset,
                                                   Const(0, I64))), limit))
        index = (moved, J) if axis == 0 else (I, moved)
        term = Load("src", index, F32)
        total = term if total is None else total + term
    return KernelFunction(name, (buffer("src", ("H", "W")), buffer("dst", ("H", "W"), "out")),
                          (Store("dst", (I, J), total / 3.0),))


def numpy_blur(image, axis):
    padded = np.pad(image, [(1, 1) if a == axis else (0, 0) for a in range(2)], mode="edge")
    shifted = [np.take(padded, range(o, o + image.shape[axis]), axis=axis) for o in range(3)]
    return (shifted[0] + shifted[1] + shifted[2]) / np.float32(3.0)


def test_two_stage_blur_graph_matches_numpy():
    replication = (Var("H", I64), Var("W", I64))
    graph = Graph(
        "main", (buffer("img", ("H", "W")), buffer("out", ("H", "W"), "out")),
        # declared consumer-first: the executor must order them by the edge
        (node("vertical", "blur_v", replication), node("horizontal", "blur_h", replication)),
        edges=(Edge("horizontal", "dst", "vertical", "src"),),
        bind_ins=(BindIn("img", "horizontal", "src"),),
        bind_outs=(BindOut("vertical", "dst", "out"),))
    functions = {"blur_h": blur_function("blur_h", 1), "blur_v": blur_function("blur_v", 0)}
    module = Module("blur", functions, {"main": graph}, "main")
    img = RNG.uniform(size=(6, 8)).astype(np.float32)
    out = run_module(module, {"img": img})["out"]
    np.testing.assert_allclose(out, numpy_blur(numpy_blur(img, 1), 0), rtol=1e-6)


def scale_function(name, factor):
    return KernelFunction(name, (buffer("x", ("N",)), buffer("y", ("N",), "out")),
                          (Store("y", (I,), Load("x", (I,), F32) * factor),))


def test_internal_node_runs_its_child_graph():
    inner = Graph(
        "inner", (buffer("x", ("N",)), buffer("y", ("N",), "out")),
        (node("double", "double", (Var("N", I64),)), node("triple", "triple", (Var("N", I64),))),
        edges=(Edge("double", "y", "triple", "x"),),
        bind_ins=(BindIn("x", "double", "x"),),
        bind_outs=(BindOut("triple", "y", "y"),))
    root = Graph(
        "main", (buffer("x", ("N",)), buffer("y", ("N",), "out")),
        (node("negate", "negate", (Var("N", I64),)), Node("both", GraphBody("inner"))),
        edges=(Edge("negate", "y", "both", "x"),),
        bind_ins=(BindIn("x", "negate", "x"),),
        bind_outs=(BindOut("both", "y", "y"),))
    functions = {f.name: f for f in (scale_function("double", 2.0), scale_function("triple", 3.0),
                                     scale_function("negate", -1.0))}
    module = Module("nested", functions, {"main": root, "inner": inner}, "main")
    out = run_module(module, {"x": np.arange(4, dtype=np.float32)})["y"]
    np.testing.assert_array_equal(out, -6 * np.arange(4))


ADD = KernelFunction("add", (buffer("a", ("N",)), buffer("b", ("N",)),
                             buffer("c", ("N",), "out")),
                     (Store("c", (I,), Load("a", (I,), F32) + Load("b", (I,), F32)),))


def test_constant_node_feeds_its_value():
    weights = np.array([10, 20, 30], np.float32)
    graph = Graph(
        "main", (buffer("x", ("N",)), buffer("y", ("N",), "out")),
        (Node("weights", ConstantBody(BufferType(F32, (3,)), weights)),
         node("add", "add", (Var("N", I64),))),
        edges=(Edge("weights", "value", "add", "b"),),
        bind_ins=(BindIn("x", "add", "a"),),
        bind_outs=(BindOut("add", "c", "y"),))
    module = Module("const", {"add": ADD}, {"main": graph}, "main")
    out = run_module(module, {"x": np.ones(3, np.float32)})["y"]
    np.testing.assert_array_equal(out, [11, 21, 31])
    np.testing.assert_array_equal(weights, [10, 20, 30])


INCREMENT = KernelFunction("increment", (buffer("buf", ("N",), "inout"),),
                           (Store("buf", (I,), Load("buf", (I,), F32) + 1.0),))
COPY = KernelFunction("copy", (buffer("x", ("N",)), buffer("y", ("N",), "out")),
                      (Store("y", (I,), Load("x", (I,), F32)),))


def test_inout_update_does_not_change_the_value_other_consumers_see():
    rep = (Var("N", I64),)
    graph = Graph(
        "main", (buffer("x", ("N",)), buffer("updated", ("N",), "out"),
                 buffer("original", ("N",), "out")),
        (node("source", "copy", rep), node("bump", "increment", rep), node("read", "copy", rep)),
        edges=(Edge("source", "y", "bump", "buf"), Edge("source", "y", "read", "x")),
        bind_ins=(BindIn("x", "source", "x"),),
        bind_outs=(BindOut("bump", "buf", "updated"), BindOut("read", "y", "original")))
    module = Module("values", {"copy": COPY, "increment": INCREMENT}, {"main": graph}, "main")
    x = np.arange(3, dtype=np.float32)
    out = run_module(module, {"x": x})
    np.testing.assert_array_equal(out["updated"], x + 1)
    np.testing.assert_array_equal(out["original"], x)


def test_inout_graph_input_is_not_modified_in_place():
    graph = Graph("main", (buffer("buf", ("N",), "inout"),),
                  (node("bump", "increment", (Var("N", I64),)),),
                  bind_ins=(BindIn("buf", "bump", "buf"),),
                  bind_outs=(BindOut("bump", "buf", "buf"),))
    module = Module("inout", {"increment": INCREMENT}, {"main": graph}, "main")
    buf = np.zeros(2, np.float32)
    out = run_module(module, {"buf": buf})["buf"]
    np.testing.assert_array_equal(out, [1, 1])
    np.testing.assert_array_equal(buf, [0, 0])


def test_scalar_graph_input_reaches_a_node_and_its_replication():
    fill = KernelFunction("fill", (Parameter("n", I64), Parameter("value", F32),
                                   buffer("y", ("n",), "out")),
                          (Store("y", (I,), Var("value", F32)),))
    graph = Graph("main", (Parameter("n", I64), Parameter("value", F32),
                           buffer("y", ("n",), "out")),
                  (node("fill", "fill", (Var("n", I64),)),),
                  bind_ins=(BindIn("n", "fill", "n"), BindIn("value", "fill", "value")),
                  bind_outs=(BindOut("fill", "y", "y"),))
    module = Module("fill", {"fill": fill}, {"main": graph}, "main")
    out = run_module(module, {"n": 4, "value": 2.5})["y"]
    np.testing.assert_array_equal(out, [2.5] * 4)


def test_a_cycle_of_edges_is_an_error_naming_the_nodes():
    rep = (Var("N", I64),)
    graph = Graph("main", (buffer("x", ("N",)),),
                  (node("p", "copy", rep), node("q", "copy", rep)),
                  edges=(Edge("p", "y", "q", "x"), Edge("q", "y", "p", "x")))
    module = Module("cycle", {"copy": COPY}, {"main": graph}, "main")
    with pytest.raises(ExecutionError, match="p, q form a cycle"):
        run_module(module, {"x": np.zeros(1, np.float32)})


def test_unconnected_input_port_is_an_error_naming_node_and_port():
    graph = Graph("main", (buffer("y", ("N",), "out"),),
                  (node("c", "copy", (Var("N", I64),)),),
                  bind_outs=(BindOut("c", "y", "y"),))
    module = Module("open", {"copy": COPY}, {"main": graph}, "main")
    with pytest.raises(ExecutionError, match="node 'c', parameter 'x': receives no value"):
        run_module(module, {})


def test_tensor_node_runs_its_op():
    tensor_ops = pytest.importorskip("hpvm.ir.tensor_ops")
    t = BufferType(F32, ("N",))
    relu = tensor_ops.tensor_node("relu", "relu", {"x": t})
    out_port = next(p.name for p in relu.body.params if p.direction == "out")
    graph = Graph("main", (buffer("x", ("N",)), buffer("y", ("N",), "out")), (relu,),
                  bind_ins=(BindIn("x", "relu", "x"),),
                  bind_outs=(BindOut("relu", out_port, "y"),))
    module = Module("tensor", {}, {"main": graph}, "main")
    x = np.array([-1, 2, -3, 4], np.float32)
    np.testing.assert_array_equal(run_module(module, {"x": x})["y"], np.maximum(x, 0))


def test_edge_from_a_port_that_is_not_an_output_is_an_error():
    rep = (Var("N", I64),)
    graph = Graph("main", (buffer("x", ("N",)),),
                  (node("p", "copy", rep), node("q", "copy", rep)),
                  edges=(Edge("p", "x", "q", "x"),),
                  bind_ins=(BindIn("x", "p", "x"),))
    module = Module("bad_edge", {"copy": COPY}, {"main": graph}, "main")
    with pytest.raises(ExecutionError, match="node 'q', parameter 'x': is fed by p.x"):
        run_module(module, {"x": np.zeros(1, np.float32)})


def test_out_of_range_access_in_a_node_names_graph_node_and_function():
    shifted = KernelFunction("shifted", (buffer("x", ("N",)), buffer("y", ("N",), "out")),
                             (Store("y", (I,), Load("x", (I + 1,), F32)),))
    graph = Graph("main", (buffer("x", ("N",)), buffer("y", ("N",), "out")),
                  (node("shift", "shifted", (Var("N", I64),)),),
                  bind_ins=(BindIn("x", "shift", "x"),), bind_outs=(BindOut("shift", "y", "y"),))
    module = Module("oob", {"shifted": shifted}, {"main": graph}, "main")
    with pytest.raises(ExecutionError, match="graph '@main', node 'shift', function '@shifted'"):
        run_module(module, {"x": np.zeros(3, np.float32)})
