"""hpvm tensor ops as OpenVINO operations (``openvino.opset13`` builders).

:func:`build_model` turns nodes of one graph (tensor ops and constants)
into an ``ov.Model``: the values flowing in become Parameters, the ports
asked for become Results.  Every OpenVINO operation made for node ``n``
has a friendly name ``n`` or ``n/<part>``, so what ``Core.query_model``
says of the operations maps back to hpvm nodes (:func:`node_of`).

Semantics follow hpvm.ir.tensor_ops (ONNX): explicit 4-sided padding,
pooling without ceil mode, average pooling counting padding only when
asked, reshape's 0 copying an input dim.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import openvino as ov
from openvino import opset13 as ops

from hpvm.ir.graph import ConstantBody, Graph, Module, TensorBody
from hpvm.ir.tensor_ops import get_op
from hpvm.ir.tensor_ops.activation import clip_bounds
from hpvm.ir.tensor_ops.chain import function_arguments
from hpvm.ir.types import BufferType

Source = Callable[[str, str], ov.Output]
"""(node, port) -> the OpenVINO value feeding that input port."""


class Untranslatable(Exception):
    """The node has no OpenVINO form (the message says why)."""


def node_of(friendly_name: str) -> str:
    """The hpvm node an OpenVINO operation was made for."""
    return friendly_name.split("/", 1)[0]


def ov_shape(type_: BufferType) -> list[int]:
    """The buffer's shape for OpenVINO: shape symbols become dynamic (-1)."""
    return [d if isinstance(d, int) else -1 for d in type_.shape]


def ov_parameter(name: str, type_: BufferType) -> ov.Node:
    return ops.parameter(ov_shape(type_), type_.element.numpy_dtype, name=name)


@dataclass
class _Node:
    """One node being translated: its name (prefix of its operations'
    names), inputs by port, attributes with defaults, output type."""

    name: str
    x: dict
    attrs: dict
    out: BufferType
    _count: int = 0

    def label(self, part: str = "") -> str:
        if not part:
            self._count += 1
            part = f"op{self._count}"
        return f"{self.name}/{part}"

    def const(self, value, dtype=None) -> ov.Node:
        return ops.constant(np.asarray(value, dtype or np.int64), name=self.label())


def translate_node(module: Module, graph: Graph, name: str, source: Source) -> dict[str, ov.Output]:
    """The OpenVINO values of node ``name``'s output ports; Untranslatable
    when it has none."""
    node = graph.node(name)
    body = node.body
    if isinstance(body, ConstantBody):
        return {"value": ops.constant(np.ascontiguousarray(body.data), name=name).output(0)}
    if not isinstance(body, TensorBody):
        raise Untranslatable("a kernel node; OpenVINO runs tensor ops")
    build = _OPS.get(body.op)
    if build is None:
        raise Untranslatable(f"tensor op '{body.op}' has no OpenVINO form here")
    attrs = get_op(body.op, name).resolve_attrs(body.attrs)
    inputs = {p.name: source(name, p.name) for p in body.params if p.direction == "in"}
    out = next(p for p in body.params if p.direction == "out")
    result = build(_Node(name, inputs, attrs, out.type))
    return {out.name: result if isinstance(result, ov.Output) else result.output(0)}


def build_model(module: Module, graph: Graph, names: list[str], source: Source,
                results: Callable[[dict], list[tuple[str, ov.Output]]], parameters,
                model_name: str) -> ov.Model:
    """An ``ov.Model`` of nodes ``names`` of ``graph`` (producers first):
    ``source(node, port)`` gives values from outside the set, ``results``
    picks the Results (name, value) from {(node, port): value}, and
    ``parameters`` lists the Parameters made by ``source``."""
    produced: dict[tuple[str, str], ov.Output] = {}
    inside = set(names)
    feeds = {(e.dst_node, e.dst_port): (e.src_node, e.src_port) for e in graph.edges}

    def value(node: str, port: str) -> ov.Output:
        src = feeds.get((node, port))
        if src is not None and src[0] in inside:
            return produced[src]
        return source(node, port)

    for name in names:
        for port, output in translate_node(module, graph, name, value).items():
            produced[(name, port)] = output
    outputs = []
    for result_name, output in results(produced):
        result = ops.result(output, name=f"{result_name}/result")
        result.output(0).get_tensor().set_names({result_name})
        outputs.append(result)
    return ov.Model(outputs, list(parameters), model_name)


# the ops -----------------------------------------------------------------
def _activation(n: _Node, y):
    kind = n.attrs.get("activation", "none")
    bounds = clip_bounds(kind)
    if bounds is not None:
        return _clamp(n, y, *bounds)
    if kind == "relu":
        return ops.relu(y, name=n.label("relu"))
    if kind == "tanh":
        return ops.tanh(y, name=n.label("tanh"))
    if kind == "sigmoid":
        return ops.sigmoid(y, name=n.label("sigmoid"))
    return y


def _conv2d(n: _Node):
    a = n.attrs
    top, left, bottom, right = a["padding"]
    x, w = n.x["x"], n.x["w"]
    args = (list(a["stride"]), [top, left], [bottom, right], list(a["dilation"]))
    if a["groups"] == 1:
        y = ops.convolution(x, w, *args, name=n.label("conv"))
    else:
        shape = w.get_partial_shape().to_shape()
        groups = a["groups"]
        grouped = ops.reshape(w, n.const([groups, shape[0] // groups, *shape[1:]]), False,
                              name=n.label("group_weights"))
        y = ops.group_convolution(x, grouped, *args, name=n.label("conv"))
    if "b" in n.x:
        bias = ops.reshape(n.x["b"], n.const([1, -1, 1, 1]), False, name=n.label("bias_shape"))
        y = ops.add(y, bias, name=n.label("bias"))
    if "z" in n.x:
        y = ops.add(y, n.x["z"], name=n.label("residual"))
    return _activation(n, y)


def _gemm(n: _Node):
    a = n.attrs
    y = ops.matmul(n.x["a"], n.x["b"], a["trans_a"], a["trans_b"], name=n.label("matmul"))
    dtype = n.out.element.numpy_dtype
    if a["alpha"] != 1.0:
        y = ops.multiply(y, n.const(a["alpha"], dtype), name=n.label("alpha"))
    if "c" in n.x:
        c = n.x["c"]
        if a["beta"] != 1.0:
            c = ops.multiply(c, n.const(a["beta"], dtype), name=n.label("beta"))
        y = ops.add(y, c, name=n.label("c"))
    return _activation(n, y)


def _bias_add(n: _Node):
    rank = len(n.out.shape)
    axis = n.attrs["axis"] % rank
    bias = ops.reshape(n.x["b"], n.const([-1] + [1] * (rank - axis - 1)), False,
                       name=n.label("bias_shape"))
    return ops.add(n.x["x"], bias, name=n.label("add"))


def _pads(n: _Node) -> tuple[list[int], list[int]]:
    top, left, bottom, right = n.attrs["padding"]
    return [top, left], [bottom, right]


def _max_pool(n: _Node):
    begin, end = _pads(n)
    pool = ops.max_pool(n.x["x"], list(n.attrs["stride"]), [1, 1], begin, end,
                        list(n.attrs["kernel"]), "floor", "explicit", name=n.label("pool"))
    return pool.output(0)


def _avg_pool(n: _Node):
    begin, end = _pads(n)
    return ops.avg_pool(n.x["x"], list(n.attrs["stride"]), begin, end, list(n.attrs["kernel"]),
                        not n.attrs["count_include_pad"], "floor", "explicit",
                        name=n.label("pool"))


def _prelu(n: _Node):
    """max(x, 0) + slope * min(x, 0), with numpy broadcasting of slope (ONNX's;
    OpenVINO's PRelu reads a 1-D slope as per channel)."""
    zero = ops.constant(np.zeros((), n.out.element.numpy_dtype), name=n.label())
    positive = ops.maximum(n.x["x"], zero, name=n.label())
    negative = ops.multiply(ops.minimum(n.x["x"], zero, name=n.label()), n.x["slope"],
                            name=n.label())
    return ops.add(positive, negative, name=n.label())


def _lrn(n: _Node):
    size = n.attrs["size"]
    if size % 2 == 0:
        raise Untranslatable("an LRN of even size: OpenVINO centres its window otherwise")
    return ops.lrn(n.x["x"], n.const([1]), n.attrs["alpha"], n.attrs["beta"], n.attrs["bias"],
                   size, name=n.label())


def _slice(n: _Node):
    """ONNX's clamped ranges given to OpenVINO's Slice as they are, except
    'through index 0' with a negative step, which OpenVINO spells INT64_MIN."""
    from hpvm.ir.tensor_ops.shape_ops import clamped_ranges
    shape = n.x["x"].get_partial_shape()
    dims = tuple(d.get_length() if d.is_static else -1 for d in shape)
    ranges = clamped_ranges(dims, n.attrs)
    axes = sorted(ranges)
    start = [ranges[a][0] for a in axes]
    stop = [ranges[a][1] if ranges[a][1] >= 0 else np.iinfo(np.int64).min for a in axes]
    step = [ranges[a][2] for a in axes]
    return ops.slice(n.x["x"], n.const(start), n.const(stop), n.const(step), n.const(axes),
                     name=n.label())


def _transpose(n: _Node):
    rank = len(n.x["x"].get_partial_shape())
    perm = n.attrs["perm"] or tuple(reversed(range(rank)))
    return ops.transpose(n.x["x"], n.const(list(perm)), name=n.label())


def _pad(n: _Node):
    pads = n.attrs["pads"]
    rank = len(pads) // 2
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}[n.attrs["mode"]]
    value = n.const(n.attrs["value"], np.float32) if mode == "constant" else None
    return ops.pad(n.x["x"], n.const(list(pads[:rank])), n.const(list(pads[rank:])), mode,
                   value, name=n.label())


def _reshape(n: _Node):
    return ops.reshape(n.x["x"], n.const(list(n.attrs["shape"])), True, name=n.label("reshape"))


def _flatten(n: _Node):
    rows, cols = n.out.shape
    shape = [-1, cols] if isinstance(cols, int) else [rows if isinstance(rows, int) else -1, -1]
    return ops.reshape(n.x["x"], n.const(shape), False, name=n.label("reshape"))


def _clamp(n: _Node, value, low, high):
    """min(max(value, low), high), the bounds rounded to the result's type."""
    dtype = n.out.element.numpy_dtype
    return ops.clamp(value, float(np.asarray(low, dtype)), float(np.asarray(high, dtype)),
                     name=n.label())


def _elementwise(n: _Node):
    value = n.x["x0"]
    for step in n.attrs["steps"]:
        kind = step[0]
        if kind == "add":
            value = ops.add(value, n.x[f"x{step[1]}"], name=n.label())
        elif kind == "mul":
            value = ops.multiply(value, n.x[f"x{step[1]}"], name=n.label())
        elif kind == "clipped_relu":
            value = _clamp(n, value, step[1], step[2])
        elif kind == "unary":
            value = _function(_UNARY_FUNCTIONS, step[1])(value, name=n.label())
        elif kind in ("binary", "rbinary"):
            value = _function(_BINARY_FUNCTIONS, step[1])(
                *function_arguments(step, value, n.x[f"x{step[2]}"]), name=n.label())
        else:
            value = _UNARY[kind](value, name=n.label())
    return value


def _function(table: dict, fn: str):
    if fn not in table:
        raise Untranslatable(f"a fused step '{fn}' has no OpenVINO form here")
    return table[fn]


def _reciprocal(value, name: str):
    one = ops.constant(np.ones((), value.get_element_type().to_dtype()), name=f"{name}/one")
    return ops.divide(one, value, name=name)


_UNARY = {"relu": ops.relu, "tanh": ops.tanh, "sigmoid": ops.sigmoid}
_UNARY_FUNCTIONS = {
    "neg": ops.negative, "abs": ops.abs, "sign": ops.sign, "sqrt": ops.sqrt,
    "reciprocal": _reciprocal, "floor": ops.floor, "ceil": ops.ceiling, "erf": ops.erf,
    "sin": ops.sin, "cos": ops.cos, "tan": ops.tan, "asin": ops.asin, "acos": ops.acos,
    "atan": ops.atan, "sinh": ops.sinh, "cosh": ops.cosh, "asinh": ops.asinh,
    "acosh": ops.acosh, "atanh": ops.atanh}
"""The chain's unary steps by the functions of hpvm's op unary.  Left to
other targets: round (half to even in hpvm), and exp and log, which
OpenVINO's CPU plugin fuses into its SoftPlus and Mish approximations
(Mish at -10 off by 2%)."""
_BINARY_FUNCTIONS = {
    "add": ops.add, "sub": ops.subtract, "mul": ops.multiply, "div": ops.divide,
    "pow": ops.power, "max": ops.maximum, "min": ops.minimum, "mod": ops.floor_mod,
    "fmod": ops.mod}

_OPS: dict[str, Callable[[_Node], object]] = {
    "conv2d": _conv2d,
    "matmul": lambda n: ops.matmul(n.x["a"], n.x["b"], False, False, name=n.label()),
    "gemm": _gemm,
    "add": lambda n: ops.add(n.x["a"], n.x["b"], name=n.label()),
    "mul": lambda n: ops.multiply(n.x["a"], n.x["b"], name=n.label()),
    "bias_add": _bias_add,
    "relu": lambda n: ops.relu(n.x["x"], name=n.label()),
    "clipped_relu": lambda n: ops.clamp(n.x["x"], float(n.attrs["min"]), float(n.attrs["max"]),
                                        name=n.label()),
    "tanh": lambda n: ops.tanh(n.x["x"], name=n.label()),
    "sigmoid": lambda n: ops.sigmoid(n.x["x"], name=n.label()),
    "max_pool": _max_pool,
    "avg_pool": _avg_pool,
    "softmax": lambda n: ops.softmax(n.x["x"], n.attrs["axis"], name=n.label()),
    "batchnorm": lambda n: ops.batch_norm_inference(
        n.x["x"], n.x["scale"], n.x["bias"], n.x["mean"], n.x["var"], n.attrs["epsilon"],
        name=n.label()),
    "prelu": _prelu,
    "slice": _slice,
    "transpose": _transpose,
    "pad": _pad,
    "lrn": _lrn,
    "reshape": _reshape,
    "flatten": _flatten,
    "concat": lambda n: ops.concat([n.x[f"x{i}"] for i in range(len(n.x))], n.attrs["axis"],
                                   name=n.label()),
    "elementwise": _elementwise,
}
TRANSLATED_OPS = frozenset(_OPS)
