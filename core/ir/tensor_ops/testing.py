"""Tensor ops for tests: an op's ``evaluate`` on one node and its
reference lowering as a module (which hpvm.interp.testing runs, to compare
the two), and small modules of one op for targets' tests
(``single_op_module``, ``approximation_case``).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from ..graph import BindIn, BindOut, ConstantBody, Edge, Graph, Module, Node, TensorBody
from ..parameter import Parameter
from ..types import BufferType, scalar_type_of_dtype
from . import get_op, tensor_node


def types_of(**arrays: np.ndarray) -> dict[str, BufferType]:
    """Concrete BufferTypes of the given arrays, by port name."""
    return {port: BufferType(scalar_type_of_dtype(a.dtype), tuple(a.shape))
            for port, a in arrays.items()}


def evaluate_node(node: Node, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``evaluate`` of the op of tensor node ``node``."""
    body = node.body
    assert isinstance(body, TensorBody)
    return get_op(body.op).evaluate(inputs, body.attrs, node=node.name)


def lowered_module(node: Node, tiles=None) -> tuple[Module, str, tuple]:
    """A module holding the lowering of ``node`` (register tiles
    ``tiles``): (module, kernel name, replication expressions)."""
    body = node.body
    assert isinstance(body, TensorBody)
    function, replication = get_op(body.op).lower(node.name, body, tiles)
    return Module(node.name, {function.name: function}, {}, "main"), function.name, replication


def single_op_module(op: str, inputs: Mapping[str, np.ndarray], attrs=None, constants=(),
                     attributes=None) -> Module:
    """A module running one tensor op (node ``op``, with node
    ``attributes``) on graph inputs, and on constant nodes for the ports in
    ``constants``; its result is the graph output ``y``."""
    types = {p: BufferType(scalar_type_of_dtype(a.dtype), a.shape) for p, a in inputs.items()}
    node = dataclasses.replace(tensor_node("op", op, types, attrs),
                               attributes=dict(attributes or {}))
    nodes, edges, binds, params = [node], [], [], []
    for port, array in inputs.items():
        if port in constants:
            nodes.append(Node(f"{port}_const", ConstantBody(types[port], array)))
            edges.append(Edge(f"{port}_const", "value", "op", port))
        else:
            params.append(Parameter(port, types[port], "in"))
            binds.append(BindIn(port, "op", port))
    out = next(p for p in node.body.params if p.direction == "out")
    params.append(Parameter("y", out.type, "out"))
    graph = Graph("main", tuple(params), tuple(nodes), tuple(edges), tuple(binds),
                  (BindOut("op", "y", "y"),))
    return Module("m", {}, {"main": graph}, "main")


APPROXIMATION_CASES = {
    "conv-perforated-rows": ("conv2d", {"x": (2, 3, 9, 8), "w": (4, 3, 3, 3), "b": (4,)},
                             {"padding": (1, 1, 1, 1), "perforate_rows": (2, 0),
                              "activation": "relu"}),
    "conv-perforated-odd-rows": ("conv2d", {"x": (2, 3, 8, 7), "w": (4, 3, 3, 3)},
                                 {"padding": (1, 1, 1, 1), "perforate_rows": (2, 1),
                                  "perforate_cols": (2, 1)}),
    "conv-perforated-cols": ("conv2d", {"x": (2, 3, 7, 9), "w": (4, 3, 3, 3), "b": (4,)},
                             {"padding": (1, 0, 2, 1), "stride": (2, 1),
                              "perforate_cols": (3, 1)}),
    "conv-perforated-both": ("conv2d", {"x": (1, 2, 8, 8), "w": (3, 2, 3, 3)},
                             {"perforate_rows": (3, 2), "perforate_cols": (2, 1)}),
    "conv-sampled": ("conv2d", {"x": (2, 3, 6, 6), "w": (4, 3, 3, 3), "b": (4,)},
                     {"padding": (1, 1, 1, 1), "sample_filter": (3, 1)}),
    "max-pool-sampled": ("max_pool", {"x": (2, 3, 6, 8)},
                         {"kernel": (2, 2), "stride": (2, 2), "sample": (2, 1)}),
    "avg-pool-sampled": ("avg_pool", {"x": (2, 3, 6, 8)},
                         {"kernel": (3, 2), "stride": (1, 2), "sample": (4, 0)}),
    "fill": ("perforation_fill", {"x": (2, 3, 5, 4)},
             {"axis": 3, "every": 3, "offset": 0, "size": 6}),
}
"""Uses of the approximation attributes every target running tensor ops
is tested on: name -> (op, input shapes, attributes)."""


def approximation_case(name: str, seed: int = 0) -> tuple[Module, dict[str, np.ndarray], str]:
    """(one-op module, f32 inputs, op) of APPROXIMATION_CASES[name]."""
    op, shapes, attrs = APPROXIMATION_CASES[name]
    rng = np.random.default_rng(seed)
    inputs = {port: rng.standard_normal(shape).astype(np.float32)
              for port, shape in shapes.items()}
    return single_op_module(op, inputs, attrs), inputs, op


CONV_LAYER_ATTRS = {"padding": (1, 1, 1, 1)}


def conv_layer(seed: int = 0) -> tuple[Module, dict[str, np.ndarray]]:
    """A 3x3 conv2d as a model has it: ``x`` (2x3x8x8) a graph input, the
    weights ``w`` (4x3x3x3) and bias ``b`` constant nodes, padding 1
    (CONV_LAYER_ATTRS); (module, the three arrays)."""
    rng = np.random.default_rng(seed)
    arrays = {"x": rng.standard_normal((2, 3, 8, 8)).astype(np.float32),
              "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
              "b": rng.standard_normal(4).astype(np.float32)}
    return single_op_module("conv2d", arrays, CONV_LAYER_ATTRS, constants=("w", "b")), arrays


INT8_CASES = {
    "conv-int8": ("conv2d", {"x": (2, 3, 9, 8), "w": (4, 3, 3, 3), "b": (4,)},
                  {"padding": (1, 1, 1, 1), "activation": "relu"}, (0.02, 0.015)),
    "gemm-int8": ("gemm", {"a": (20, 24), "b": (10, 24), "c": (10,)},
                  {"trans_b": True, "alpha": 0.5, "beta": 2.0}, (0.02, 0.03)),
    "gemm-int8-trans-a": ("gemm", {"a": (13, 20), "b": (13, 9)}, {"trans_a": True},
                          (0.03, 0.02)),
    "matmul-int8": ("matmul", {"a": (33, 12), "b": (12, 5)}, {}, (0.025, 0.02)),
    "matmul-int8-few-rows": ("matmul", {"a": (3, 12), "b": (12, 5)}, {}, (0.025, 0.02)),
}
"""INT8 nodes every target running tensor ops is tested on: name -> (op,
input shapes, attributes, int8_scales).  The scales are small enough that
some of the standard-normal operands saturate."""


def int8_case(name: str, seed: int = 0) -> tuple[Module, dict[str, np.ndarray]]:
    """(one-op module with precision int8, its graph inputs) of
    INT8_CASES[name]; every input but the first is a constant node (the
    weights, as in a model)."""
    op, shapes, attrs, scales = INT8_CASES[name]
    rng = np.random.default_rng(seed)
    arrays = {port: rng.standard_normal(shape).astype(np.float32)
              for port, shape in shapes.items()}
    first = next(iter(arrays))
    module = single_op_module(op, arrays, attrs, constants=tuple(arrays)[1:],
                              attributes={"precision": "int8", "int8_scales": scales})
    return module, {first: arrays[first]}


def example_nodes(seed: int = 0) -> dict[str, tuple[Node, dict[str, np.ndarray]]]:
    """One small example use of every op: name -> (tensor node, inputs, f32
    but for select's condition).
    Batch dims are the symbol "N" where the op allows it; for targets and
    passes that want to run every op once."""
    rng = np.random.default_rng(seed)

    def arrays(**shapes):
        return {port: rng.standard_normal(shape).astype(np.float32)
                for port, shape in shapes.items()}

    def node(op, inputs, attrs=None, symbolic=()):
        types = types_of(**inputs)
        for port in symbolic:
            types[port] = BufferType(types[port].element, ("N",) + types[port].shape[1:])
        return tensor_node(f"{op}_node", op, types, attrs), inputs

    x4 = arrays(x=(2, 4, 6, 5))
    channels = arrays(scale=(4,), bias=(4,), mean=(4,), var=(4,))
    channels["var"] = np.abs(channels["var"]) + 0.1
    window = {"kernel": (3, 2), "stride": (2, 1), "padding": (1, 0, 1, 1)}
    return {
        "conv2d": node("conv2d", {**x4, **arrays(w=(6, 2, 3, 3), b=(6,))},
                       {"padding": (1, 1, 1, 1), "groups": 2}, ("x",)),
        "matmul": node("matmul", arrays(a=(2, 3, 4), b=(4, 5)), symbolic=("a",)),
        "gemm": node("gemm", arrays(a=(3, 4), b=(5, 4), c=(5,)),
                     {"alpha": 0.5, "trans_b": True}, ("a",)),
        "add": node("add", arrays(a=(2, 3, 1), b=(4,)), symbolic=("a",)),
        "mul": node("mul", arrays(a=(2, 3), b=(2, 3))),
        "bias_add": node("bias_add", {**x4, **arrays(b=(4,))}, symbolic=("x",)),
        "relu": node("relu", x4, symbolic=("x",)),
        "clipped_relu": node("clipped_relu", x4, {"min": -0.5, "max": 0.5}, ("x",)),
        "tanh": node("tanh", x4, symbolic=("x",)),
        "sigmoid": node("sigmoid", x4, symbolic=("x",)),
        "max_pool": node("max_pool", x4, window, ("x",)),
        "avg_pool": node("avg_pool", x4, window, ("x",)),
        "softmax": node("softmax", x4, {"axis": 1}, ("x",)),
        "batchnorm": node("batchnorm", {**x4, **channels}, symbolic=("x",)),
        "lrn": node("lrn", x4, {"size": 4, "alpha": 0.5, "bias": 2.0}, ("x",)),
        "prelu": node("prelu", {**x4, **arrays(slope=(4, 1, 1))}, symbolic=("x",)),
        "reshape": node("reshape", x4, {"shape": (0, -1, 5)}, ("x",)),
        "flatten": node("flatten", x4, symbolic=("x",)),
        "slice": node("slice", x4, {"starts": (1, -1), "ends": (3, 0), "axes": (1, 3),
                                    "steps": (1, -2)}, ("x",)),
        "transpose": node("transpose", x4, {"perm": (0, 2, 3, 1)}, ("x",)),
        "pad": node("pad", x4, {"pads": (0, 1, 2, 0, 0, 0, 1, 3), "value": 1.5}, ("x",)),
        "concat": node("concat", arrays(x0=(2, 1, 3), x1=(2, 2, 3)), symbolic=("x0", "x1")),
        "perforation_fill": node("perforation_fill", arrays(x=(2, 4, 4, 5)),
                                 {"axis": 2, "every": 2, "offset": 0, "size": 9}, ("x",)),
        "elementwise": node("elementwise", {"x0": x4["x"], **arrays(x1=(4, 1, 1), x2=(2, 4, 6, 5))},
                            {"steps": (("mul", 1), ("add", 2), ("clipped_relu", -1.0, 1.0),
                                       ("sigmoid",))}, ("x0", "x2")),
        "rowwise": node("rowwise", {"x0": x4["x"], **arrays(x1=(6, 5), x2=(1,))}, {
            "axes": 2, "program": (("input", 0), ("reduce", "sum", 0), ("input", 2),
                                   ("binary", "mul", 1, 2), ("binary", "sub", 0, 3),
                                   ("unary", "exp", 4), ("reduce", "sum", 5),
                                   ("binary", "div", 5, 6), ("input", 1), ("binary", "mul", 7, 8),
                                   ("clip", -1.0, 1.0, 9), ("unary", "relu", 10))}, ("x0",)),
        "attention": node("attention", {**arrays(x0=(2, 3, 5, 4), x1=(3, 4, 7), x2=(7, 6)),
                                        "x3": np.float32([0.5])}, {
            "program": (("input", 0), ("input", 1), ("binary", "mul", 0, 1),
                        ("reduce", "max", 2), ("binary", "sub", 2, 3), ("unary", "exp", 4),
                        ("reduce", "sum", 5), ("binary", "div", 5, 6))}, ("x0",)),
        "unary": node("unary", x4, {"fn": "erf"}, ("x",)),
        "binary": node("binary", arrays(a=(2, 3, 4), b=(3, 1)), {"fn": "div"}, ("a",)),
        "select": node("select", {"cond": x4["x"][0] > 0, **arrays(a=(2, 4, 6, 5), b=(5,))},
                       symbolic=("a",)),
        "cast": node("cast", x4, {"to": "i32"}, ("x",)),
        "reduce": node("reduce", x4, {"fn": "sum", "axes": (1, 3), "keepdims": 0}, ("x",)),
        "arg_reduce": node("arg_reduce", x4, {"fn": "argmax", "axis": 2}, ("x",)),
        "expand": node("expand", arrays(x=(3, 1)), {"shape": (2, 1, 4)}),
        "gather": node("gather", {**x4, "indices": np.array([[3, -1], [0, 2]], np.int64)},
                       {"axis": 1}, ("x",)),
        "gather_elements": node("gather_elements", {
            **arrays(x=(3, 4)), "indices": np.array([[1, -1, 0, 2], [0, 0, 1, 3]], np.int32)},
            {"axis": 1}),
        "cumsum": node("cumsum", x4, {"axis": 2, "exclusive": 1, "reverse": 1}, ("x",)),
        "bitcast": node("bitcast", x4, {"to": "u32"}, ("x",)),
        "scatter": node("scatter", {**arrays(x=(3, 4), updates=(2, 3)),
                                    "positions": np.array([[0, 5, -1], [5, 2, 2]], np.int64)},
                        {"reduction": "add"}),
        "sort": node("sort", {"x": np.round(x4["x"])}, {"axis": 2, "descending": 1}, ("x",)),
    }


def sample_floats(count: int = 4000, seed: int = 0) -> np.ndarray:
    """f32 values to convert to the narrow types: random bit patterns (NaNs
    and subnormals among them), values of every magnitude, and the edges of
    the formats (their largest values, halfway points, infinities)."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = rng.standard_normal(count) * 10.0 ** rng.integers(-12, 8, count)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 448, 449, 464, 480, 57344, 61440, 6, 7, 0.25,
             1e-3, 3e-8, 1.5e-45, 2.0**-10, 2.0**-9 * 1.5, 3.3895314e38, -7.5, 300.0, -8.5]
    with np.errstate(all="ignore"):
        return np.concatenate([patterns, scaled, edges]).astype(np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elements equal bit for bit, or both NaN."""
    storage = f"u{a.dtype.itemsize}"
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return (a.view(storage) == b.view(storage)) | both_nan
