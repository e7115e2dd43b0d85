"""ONNX's operators that pick, repeat or re-view elements of a run-time
tensor: Expand, Gather, GatherElements, GatherND, Unsqueeze, Squeeze,
Tile, Trilu, OneHot, EyeLike, TopK, CumSum and CumProd (on constants they are
folded at import time instead)."""
from __future__ import annotations

import numpy as np

from ...ir.types import I64
from .names import ELEMENT_TYPES
from .pointwise import binary, cast, scalar, select
from .shapes import reshape_attr
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _constant_ints(state: GraphState, node: OnnxNode, index: int, what: str):
    if len(node.inputs) <= index or not node.inputs[index]:
        return None
    return tuple(int(v) for v in np.asarray(state.constant(node.inputs[index], what)).reshape(-1))


def fixed_shape(node: OnnxNode, x: Value) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in x.type.shape):
        raise Unsupported(f"{node.op_type} of an input of symbolic shape {x.type}",
                          "give the input fixed sizes")
    return x.type.shape


def view(state: GraphState, node: OnnxNode, x: Value, dims) -> Value:
    """``x`` viewed with ``dims`` (ints or x's shape symbols)."""
    return state.step(node, "reshape", {"x": x}, {"shape": reshape_attr(dims, x.type.shape)})


def expand(state: GraphState, node: OnnxNode) -> list[Value]:
    shape = _constant_ints(state, node, 1, "Expand's shape")
    return [state.step(node, "expand", {"x": node.input(state, 0)}, {"shape": shape})]


def gather(state: GraphState, node: OnnxNode) -> list[Value]:
    inputs = {"x": node.input(state, 0), "indices": node.input(state, 1)}
    return [state.step(node, "gather", inputs, {"axis": node.attr("axis", 0)})]


def gather_elements(state: GraphState, node: OnnxNode) -> list[Value]:
    inputs = {"x": node.input(state, 0), "indices": node.input(state, 1)}
    return [state.step(node, "gather_elements", inputs, {"axis": node.attr("axis", 0)})]


def _squeeze_converter(opset_axes: int):
    def convert(state: GraphState, node: OnnxNode, opset: int) -> list[Value]:
        x = node.input(state, 0)
        given = _constant_ints(state, node, 1, f"{node.op_type}'s axes") \
            if opset >= opset_axes else None
        axes = given if given is not None else tuple(node.attr("axes", ()))
        shape = list(x.type.shape)
        if node.op_type == "Unsqueeze":
            rank = len(shape) + len(axes)
            for axis in sorted(a % rank for a in axes):
                shape.insert(axis, 1)
        else:
            rank = len(shape)
            drop = {a % rank for a in axes} if axes else {
                a for a, d in enumerate(shape) if d == 1}
            shape = [d for a, d in enumerate(shape) if a not in drop]
        return [view(state, node, x, shape)]
    return convert


def tile(state: GraphState, node: OnnxNode) -> list[Value]:
    """x (d0, d1 ...) viewed as (1, d0, 1, d1 ...), expanded to (r0, d0,
    r1, d1 ...) and viewed as (r0 * d0, r1 * d1 ...)."""
    x = node.input(state, 0)
    shape = fixed_shape(node, x)
    repeats = _constant_ints(state, node, 1, "Tile's repeats")
    spread = [v for d in shape for v in (1, d)]
    expanded = [v for r, d in zip(repeats, shape) for v in (r, d)]
    wide = state.step(node, "expand", {"x": view(state, node, x, spread)},
                      {"shape": tuple(expanded)})
    return [view(state, node, wide, [r * d for r, d in zip(repeats, shape)])]


def trilu(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    rows, cols = fixed_shape(node, x)[-2:]
    k = (_constant_ints(state, node, 1, "Trilu's k") or (0,))[0]
    distance = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = distance >= k if node.attr("upper", 1) else distance <= k
    return [select(state, node, ConstValue(keep), x, scalar(0, x))]


def from_end(state: GraphState, node: OnnxNode, index: Value, size: int) -> Value:
    """``index``, a negative one counted from the end of an axis of ``size``."""
    return select(state, node, binary(state, node, "less", index, scalar(0, index)),
                  binary(state, node, "add", index, scalar(size, index)), index)


def strides_of(shape) -> list[int]:
    """Row-major strides, in elements, of an array of ``shape``."""
    return [int(np.prod(shape[axis + 1:])) for axis in range(len(shape))]


def index_tuple_offsets(state: GraphState, node: OnnxNode, indices: Value, sizes,
                        strides) -> Value:
    """The flat offsets of the index tuples along ``indices``' last axis
    (entry k indexes an axis of ``sizes[k]`` with stride ``strides[k]``),
    shaped like ``indices`` with a last axis of 1."""
    index = cast(state, node, indices, I64)
    last = len(indices.type.shape) - 1
    total = None
    for axis, (size, stride) in enumerate(zip(sizes, strides)):
        picked = state.step(node, "slice", {"x": index}, {
            "starts": (axis,), "ends": (axis + 1,), "axes": (last,)})
        term = binary(state, node, "mul", from_end(state, node, picked, size),
                      scalar(stride, picked))
        total = term if total is None else binary(state, node, "add", total, term)
    return total


def gather_nd(state: GraphState, node: OnnxNode) -> list[Value]:
    """GatherND as one gather: the index tuples (and the batch they are in)
    made flat indices into ``data`` with its indexed axes joined."""
    data, indices = node.input(state, 0), node.input(state, 1)
    batch = node.attr("batch_dims", 0)
    data_shape, index_shape = fixed_shape(node, data), fixed_shape(node, indices)
    depth = index_shape[-1]
    joined = data_shape[:batch + depth]
    strides = strides_of(joined)
    flat = index_tuple_offsets(state, node, indices, data_shape[batch:batch + depth],
                               strides[batch:])
    if batch:
        offsets = sum(np.arange(size).reshape([-1 if a == axis else 1 for a in range(batch)])
                      * strides[axis] for axis, size in enumerate(data_shape[:batch]))
        offsets = ConstValue(np.asarray(offsets, np.int64).reshape(
            data_shape[:batch] + (1,) * (len(index_shape) - batch)))
        flat = binary(state, node, "add", flat, offsets)
    flat = view(state, node, flat, index_shape[:-1])
    rows = view(state, node, data, (int(np.prod(joined)),) + data_shape[batch + depth:])
    return [state.step(node, "gather", {"x": rows, "indices": flat}, {"axis": 0})]


def one_hot(state: GraphState, node: OnnxNode) -> list[Value]:
    """OneHot: ``values[1]`` where an index (negative ones counted from
    ``depth``) equals the position along the new ``axis``, ``values[0]``
    elsewhere."""
    indices, values = node.input(state, 0), node.input(state, 2)
    depth = int(np.asarray(state.constant(node.inputs[1], "OneHot's depth")).reshape(-1)[0])
    rank = len(indices.type.shape) + 1
    axis = node.attr("axis", -1) % rank
    index = from_end(state, node, cast(state, node, indices, I64), depth)
    shape = list(indices.type.shape)
    index = view(state, node, index, shape[:axis] + [1] + shape[axis:])
    positions = np.arange(depth, dtype=np.int64).reshape([-1 if a == axis else 1
                                                          for a in range(rank)])
    hot = binary(state, node, "equal", index, ConstValue(positions))
    off, on = (state.step(node, "gather", {"x": values, "indices": ConstValue(np.int64(i))},
                          {"axis": 0}) for i in (0, 1))
    return [select(state, node, hot, on, off)]


def eye_like(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    rows, cols = fixed_shape(node, x)
    element = ELEMENT_TYPES.get(node.attr("dtype", 0)) or x.type.element
    return [ConstValue(np.eye(rows, cols, node.attr("k", 0), dtype=element.numpy_dtype))]


def top_k(state: GraphState, node: OnnxNode) -> list[Value]:
    """TopK: a stable sort along ``axis`` (largest first unless
    ``largest=0``), the first k values and their indices."""
    x = node.input(state, 0)
    k = _constant_ints(state, node, 1, "TopK's k")[0]
    axis = node.attr("axis", -1) % len(x.type.shape)
    ordered = state.step(node, "sort", {"x": x}, {
        "axis": axis, "descending": int(node.attr("largest", 1))})
    first = {"starts": (0,), "ends": (k,), "axes": (axis,)}
    return [state.step(node, "slice", {"x": result}, first) for result in state.results(ordered)]


def _running(fn: str):
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        axis = _constant_ints(state, node, 1, f"{node.op_type}'s axis")[0]
        attrs = {"axis": axis, "exclusive": node.attr("exclusive", 0),
                 "reverse": node.attr("reverse", 0), "fn": fn}
        return [state.step(node, "cumsum", {"x": node.input(state, 0)}, attrs)]
    return convert


INDEXING_CONVERTERS = {
    "Expand": expand, "Gather": gather, "GatherElements": gather_elements, "Tile": tile,
    "Trilu": trilu, "CumSum": _running("sum"), "CumProd": _running("prod"),
    "GatherND": gather_nd, "OneHot": one_hot, "EyeLike": eye_like, "TopK": top_k,
}
SQUEEZE_CONVERTERS = {"Unsqueeze": _squeeze_converter(13), "Squeeze": _squeeze_converter(13)}
"""These take the opset: their axes became an input in opset 13."""
