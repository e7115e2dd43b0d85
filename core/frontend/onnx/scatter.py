"""ONNX's ScatterElements, Scatter and ScatterND as the ``scatter``
primitive: the flat position of every update in the data, computed with
pointwise ops from the indices (a negative index counts from the end of
its axis) and constant grids of the other coordinates."""
from __future__ import annotations

import numpy as np

from ...ir.types import I64
from .indexing import fixed_shape, from_end, index_tuple_offsets, strides_of
from .pointwise import binary, cast, scalar
from .values import ConstValue, GraphState, OnnxNode, Value


def _reduction(node: OnnxNode) -> str:
    reduction = node.text("reduction", "none")
    if reduction not in ("none", "add", "mul", "max", "min"):
        node.reject("reduction", reduction, "reduction none, add, mul, max or min")
    return reduction


def _scatter(state, node, data: Value, positions: Value, updates: Value) -> list[Value]:
    inputs = {"x": data, "positions": positions, "updates": updates}
    return [state.step(node, "scatter", inputs, {"reduction": _reduction(node)})]


def scatter_elements(state: GraphState, node: OnnxNode) -> list[Value]:
    data, indices, updates = (node.input(state, i) for i in range(3))
    shape, where = fixed_shape(node, data), fixed_shape(node, indices)
    axis = node.attr("axis", 0) % len(shape)
    strides = strides_of(shape)
    grid = sum(np.arange(size).reshape([-1 if a == other else 1 for a in range(len(where))])
               * strides[other] for other, size in enumerate(where) if other != axis)
    index = from_end(state, node, cast(state, node, indices, I64), shape[axis])
    moved = binary(state, node, "mul", index, scalar(strides[axis], index))
    base = ConstValue(np.broadcast_to(np.asarray(grid, np.int64), where).copy())
    return _scatter(state, node, data, binary(state, node, "add", moved, base), updates)


def scatter_nd(state: GraphState, node: OnnxNode) -> list[Value]:
    data, indices, updates = (node.input(state, i) for i in range(3))
    shape, where = fixed_shape(node, data), fixed_shape(node, indices)
    depth = where[-1]
    base = index_tuple_offsets(state, node, indices, shape[:depth], strides_of(shape))
    rest = shape[depth:]
    base = state.step(node, "reshape", {"x": base}, {"shape": where[:-1] + (1,) * len(rest)})
    within = ConstValue(np.arange(int(np.prod(rest)), dtype=np.int64).reshape(rest))
    return _scatter(state, node, data, binary(state, node, "add", base, within), updates)


def tensor_scatter(state: GraphState, node: OnnxNode) -> list[Value]:
    """TensorScatter: a cache with each batch's update written along
    ``axis`` from its write index (wrapping round in ``circular`` mode)."""
    cache, update, starts = (node.input(state, i) for i in range(3))
    shape, written = fixed_shape(node, cache), fixed_shape(node, update)
    axis = node.attr("axis", -2) % len(shape)
    mode = node.text("mode", "linear")
    if mode not in ("linear", "circular") or axis == 0:
        node.reject("mode" if axis else "axis", mode if axis else 0,
                    "mode linear or circular along an axis after the batch")
    strides = strides_of(shape)
    grid = sum(np.arange(size).reshape([-1 if a == other else 1 for a in range(len(written))])
               * strides[other] for other, size in enumerate(written) if other != axis)
    base = ConstValue(np.broadcast_to(np.asarray(grid, np.int64), written).copy())
    steps = np.arange(written[axis], dtype=np.int64).reshape(
        [-1 if a == axis else 1 for a in range(len(written))])
    if starts is None:
        along: Value = ConstValue(steps)
    else:
        first = state.step(node, "reshape", {"x": cast(state, node, starts, I64)},
                           {"shape": (shape[0],) + (1,) * (len(shape) - 1)})
        along = binary(state, node, "add", first, ConstValue(steps))
    if mode == "circular":
        along = binary(state, node, "mod", along, scalar(shape[axis], along))
    moved = binary(state, node, "mul", along, scalar(strides[axis], along))
    return _scatter(state, node, cache, binary(state, node, "add", moved, base), update)


SCATTER_CONVERTERS = {"TensorScatter": tensor_scatter, "ScatterElements": scatter_elements,
                      "Scatter": scatter_elements, "ScatterND": scatter_nd}
