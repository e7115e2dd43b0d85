"""ONNX nodes evaluated at import time: constants, aliases, and the shape
arithmetic exporters emit around Reshape (``x.view(x.size(0), -1)`` becomes
Shape -> Gather -> Unsqueeze -> Concat -> Reshape).

``fold(state, node, opset)`` returns the output Values when the node can be
evaluated here (its inputs are constants or shapes), else None.
"""
from __future__ import annotations

import numpy as np

from .folding import evaluate
from .names import ELEMENT_TYPES
from .values import ConstValue, GraphState, OnnxNode, ShapeValue, Unsupported, Value

ALIASES = ("Identity", "Dropout")


def fold(state: GraphState, node: OnnxNode, opset: int) -> list[Value] | None:
    """Outputs of ``node`` computed at import time, or None."""
    if node.op_type == "Constant":
        return [ConstValue(_constant_attr(node))]
    if node.op_type in ALIASES:
        return _alias(state, node)
    if node.op_type == "Shape":
        return [_shape_of(state.value(node.inputs[0]), node)]
    if node.op_type == "Size":
        return _size_of(state.value(node.inputs[0]))
    inputs = [state.value(n) if n else None for n in node.inputs]
    if not all(isinstance(v, (ConstValue, ShapeValue)) or v is None for v in inputs):
        return None
    handler = _ARRAY_OPS.get(node.op_type)
    if any(isinstance(v, ShapeValue) and not _concrete(v) for v in inputs):
        return _fold_symbolic(state, node, inputs) if handler else None
    arrays = [_array(v) for v in inputs]
    if handler is None:
        results = evaluate(node, arrays, opset)
        return None if results is None else [ConstValue(r) for r in results]
    return [ConstValue(np.asarray(handler(node, arrays, opset)))]


def _size_of(value: Value) -> list[Value] | None:
    dims = value.type.shape if not isinstance(value, ShapeValue) else (
        () if value.scalar else (len(value.dims),))
    if not all(isinstance(d, int) for d in dims):
        return None
    return [ConstValue(np.array(int(np.prod(dims)), dtype=np.int64))]


def _constant_attr(node: OnnxNode) -> np.ndarray:
    from onnx import numpy_helper  # onnx (heavy)
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if key in node.attrs:
            value = node.attrs[key]
            if key == "value":
                return numpy_helper.to_array(value)
            dtype = np.float32 if "float" in key else np.int64
            return np.array(value, dtype=dtype)
    raise Unsupported("Constant without a value, value_float(s) or value_int(s) attribute",
                      "store the constant as a tensor")


def _alias(state: GraphState, node: OnnxNode) -> list[Value]:
    if node.op_type == "Dropout" and len(node.inputs) > 2 and node.inputs[2]:
        if state.is_constant(node.inputs[2]) and state.constant(node.inputs[2], "training_mode"):
            raise Unsupported("Dropout in training mode", "export the model in eval mode")
    if len([o for o in node.outputs if o]) > 1:
        raise Unsupported(f"{node.op_type}'s mask output is not supported",
                          "drop the mask output")
    return [state.value(node.inputs[0])]


def _shape_of(value: Value, node: OnnxNode) -> Value:
    dims = tuple(value.type.shape if not isinstance(value, ShapeValue)
                 else (() if value.scalar else (len(value.dims),)))
    start, end = node.attr("start", 0), node.attr("end", None)
    dims = dims[start:end]
    if all(isinstance(d, int) for d in dims):
        return ConstValue(np.array(dims, dtype=np.int64))
    return ShapeValue(dims)


def _concrete(value: ShapeValue) -> bool:
    return all(isinstance(d, int) for d in value.dims)


def _array(value: Value | None):
    if value is None:
        return None
    if isinstance(value, ShapeValue):
        return np.array(value.dims[0] if value.scalar else value.dims, dtype=np.int64)
    return value.array


def _fold_symbolic(state: GraphState, node: OnnxNode, inputs) -> list[Value]:
    """Gather, Unsqueeze, Squeeze, Concat, Cast on shapes with symbols."""
    op = node.op_type
    first = inputs[0]
    if op == "Cast":
        return [first]
    if op == "Gather" and isinstance(first, ShapeValue) and isinstance(inputs[1], ConstValue):
        index = inputs[1].array
        picked = tuple(first.dims[int(i)] for i in np.atleast_1d(index))
        return [ShapeValue(picked, scalar=index.ndim == 0)]
    if op in ("Unsqueeze", "Squeeze") and isinstance(first, ShapeValue):
        return [ShapeValue(first.dims, scalar=op == "Squeeze")]
    if op == "Concat":
        dims: list = []
        for value in inputs:
            if isinstance(value, ShapeValue):
                dims.extend(value.dims)
            else:
                dims.extend(int(d) for d in np.atleast_1d(value.array))
        return [ShapeValue(tuple(dims))]
    raise Unsupported(f"{op} on a shape with symbolic sizes is not supported",
                      "give the model fixed input sizes")


def _gather(node, arrays, opset):
    return np.take(arrays[0], arrays[1], axis=node.attr("axis", 0))


def _axes(node, arrays, opset):
    if opset >= 13 and len(arrays) > 1 and arrays[1] is not None:
        return tuple(int(a) for a in arrays[1])
    return tuple(node.attr("axes", ()))


def _unsqueeze(node, arrays, opset):
    result = arrays[0]
    rank = result.ndim + len(_axes(node, arrays, opset))
    for axis in sorted(a % rank for a in _axes(node, arrays, opset)):
        result = np.expand_dims(result, axis)
    return result


def _squeeze(node, arrays, opset):
    axes = _axes(node, arrays, opset)
    return np.squeeze(arrays[0], axis=axes or None)


def _cast(node, arrays, opset):
    return arrays[0].astype(ELEMENT_TYPES[node.attr("to")].numpy_dtype)


def _slice(node, arrays, opset):
    data, starts, ends = arrays[0], arrays[1], arrays[2]
    axes = arrays[3] if len(arrays) > 3 and arrays[3] is not None else range(len(starts))
    steps = arrays[4] if len(arrays) > 4 and arrays[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[int(axis)] = slice(int(start), int(end), int(step))
    return data[tuple(index)]


_ARRAY_OPS = {
    "Gather": _gather, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Cast": _cast,
    "Slice": _slice,
    "Transpose": lambda node, arrays, opset: np.transpose(arrays[0], node.attr("perm", None)),
    "Concat": lambda node, arrays, opset: np.concatenate(arrays, axis=node.attr("axis")),
}


FOLDED_OPS = frozenset(_ARRAY_OPS) | {"Constant", "Shape", "Size"} | set(ALIASES)
"""Operators evaluated at import time (the array ops only on constants)."""


def reshape_target(state: GraphState, name: str, source_type) -> tuple[int, ...]:
    """The ``shape`` attribute of a reshape of ``source_type`` to tensor
    ``name`` (a constant, or a shape with symbols: a symbol at the position
    it has in the source copies it (0); another becomes -1)."""
    value = state.value(name)
    if isinstance(value, ShapeValue):
        return reshape_attr(value.dims, source_type.shape)
    shape = tuple(int(d) for d in state.constant(name, "Reshape's shape"))
    return shape


def reshape_attr(dims, source_shape) -> tuple[int, ...]:
    """The reshape ``shape`` attribute for target ``dims`` (ints or shape
    symbols): a symbol at the position it has in the source copies it (0);
    another becomes -1 (inferred), at most once."""
    attr = []
    for position, dim in enumerate(dims):
        if isinstance(dim, int):
            attr.append(dim)
        elif position < len(source_shape) and source_shape[position] == dim:
            attr.append(0)
        else:
            attr.append(-1)
    if attr.count(-1) > 1:
        raise Unsupported(f"a reshape to {list(dims)} has more than one size that cannot be "
                          "resolved", "give the model fixed sizes")
    return tuple(attr)
