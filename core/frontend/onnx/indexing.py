"""ONNX's operators that pick, repeat or re-view elements of a run-time
tensor: Expand, Gather, GatherElements, Unsqueeze, Squeeze, Tile, Trilu
and CumSum (on constants they are folded at import time instead)."""
from __future__ import annotations

import numpy as np

from .pointwise import scalar, select
from .shapes import reshape_attr
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _constant_ints(state: GraphState, node: OnnxNode, index: int, what: str):
    if len(node.inputs) <= index or not node.inputs[index]:
        return None
    return tuple(int(v) for v in np.asarray(state.constant(node.inputs[index], what)).reshape(-1))


def _fixed(node: OnnxNode, x: Value) -> tuple[int, ...]:
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
    shape = _fixed(node, x)
    repeats = _constant_ints(state, node, 1, "Tile's repeats")
    spread = [v for d in shape for v in (1, d)]
    expanded = [v for r, d in zip(repeats, shape) for v in (r, d)]
    wide = state.step(node, "expand", {"x": view(state, node, x, spread)},
                      {"shape": tuple(expanded)})
    return [view(state, node, wide, [r * d for r, d in zip(repeats, shape)])]


def trilu(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    rows, cols = _fixed(node, x)[-2:]
    k = (_constant_ints(state, node, 1, "Trilu's k") or (0,))[0]
    distance = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = distance >= k if node.attr("upper", 1) else distance <= k
    return [select(state, node, ConstValue(keep), x, scalar(0, x))]


def cumsum(state: GraphState, node: OnnxNode) -> list[Value]:
    axis = _constant_ints(state, node, 1, "CumSum's axis")[0]
    attrs = {"axis": axis, "exclusive": node.attr("exclusive", 0),
             "reverse": node.attr("reverse", 0)}
    return [state.step(node, "cumsum", {"x": node.input(state, 0)}, attrs)]


INDEXING_CONVERTERS = {
    "Expand": expand, "Gather": gather, "GatherElements": gather_elements, "Tile": tile,
    "Trilu": trilu, "CumSum": cumsum,
}
SQUEEZE_CONVERTERS = {"Unsqueeze": _squeeze_converter(13), "Squeeze": _squeeze_converter(13)}
"""These take the opset: their axes became an input in opset 13."""
