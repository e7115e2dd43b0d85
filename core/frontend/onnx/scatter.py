"""ONNX's ScatterElements, Scatter and ScatterND as the ``scatter``
primitive: the flat position of every update in the data, computed with
pointwise ops from the indices (a negative index counts from the end of
its axis) and constant grids of the other coordinates."""
from __future__ import annotations

import numpy as np

from ...ir.types import I64
from .pointwise import binary, cast, scalar, select
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _fixed(node: OnnxNode, value: Value) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in value.type.shape):
        raise Unsupported(f"{node.op_type} of a tensor of symbolic shape {value.type}",
                          "give the data and indices fixed sizes")
    return value.type.shape


def _strides(shape) -> list[int]:
    return [int(np.prod(shape[axis + 1:])) for axis in range(len(shape))]


def _wrapped(state: GraphState, node: OnnxNode, index: Value, size: int) -> Value:
    return select(state, node, binary(state, node, "less", index, scalar(0, index)),
                  binary(state, node, "add", index, scalar(size, index)), index)


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
    shape, where = _fixed(node, data), _fixed(node, indices)
    axis = node.attr("axis", 0) % len(shape)
    strides = _strides(shape)
    grid = sum(np.arange(size).reshape([-1 if a == other else 1 for a in range(len(where))])
               * strides[other] for other, size in enumerate(where) if other != axis)
    index = _wrapped(state, node, cast(state, node, indices, I64), shape[axis])
    moved = binary(state, node, "mul", index, scalar(strides[axis], index))
    base = ConstValue(np.broadcast_to(np.asarray(grid, np.int64), where).copy())
    return _scatter(state, node, data, binary(state, node, "add", moved, base), updates)


def scatter_nd(state: GraphState, node: OnnxNode) -> list[Value]:
    data, indices, updates = (node.input(state, i) for i in range(3))
    shape, where = _fixed(node, data), _fixed(node, indices)
    depth, strides = where[-1], _strides(shape)
    index = cast(state, node, indices, I64)
    base = None
    for axis in range(depth):
        picked = state.step(node, "slice", {"x": index}, {
            "starts": (axis,), "ends": (axis + 1,), "axes": (len(where) - 1,)})
        term = binary(state, node, "mul", _wrapped(state, node, picked, shape[axis]),
                      scalar(strides[axis], picked))
        base = term if base is None else binary(state, node, "add", base, term)
    rest = shape[depth:]
    base = state.step(node, "reshape", {"x": base}, {"shape": where[:-1] + (1,) * len(rest)})
    within = ConstValue(np.arange(int(np.prod(rest)), dtype=np.int64).reshape(rest))
    return _scatter(state, node, data, binary(state, node, "add", base, within), updates)


def tensor_scatter(state: GraphState, node: OnnxNode) -> list[Value]:
    """TensorScatter: a cache with each batch's update written along
    ``axis`` from its write index (wrapping round in ``circular`` mode)."""
    cache, update, starts = (node.input(state, i) for i in range(3))
    shape, written = _fixed(node, cache), _fixed(node, update)
    axis = node.attr("axis", -2) % len(shape)
    mode = node.text("mode", "linear")
    if mode not in ("linear", "circular") or axis == 0:
        node.reject("mode" if axis else "axis", mode if axis else 0,
                    "mode linear or circular along an axis after the batch")
    strides = _strides(shape)
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
