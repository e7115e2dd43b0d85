"""Sliding windows the window ops cannot take (3-D inputs, dilated
pooling, averages with ceil_mode that count the padding), composed from
primitives.

A pool becomes a reduction over its window's taps: the input padded
(with -inf for a max, 0 otherwise), one gather per spatial axis picking
``out * stride + tap * dilation`` for every tap and output position, the
taps moved last and reduced (max, or a sum divided by the number of
elements each window covers).  A 3-D convolution becomes one 2-D
convolution per tap of the kernel's depth, over the input's depth slices
that tap reads (joined into the batch), summed.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import pointwise
from .indexing import fixed_shape, view
from .values import ConstValue, GraphState, OnnxNode, Value


def needs_taps(node: OnnxNode, x: Value) -> bool:
    """Whether a Conv or pool node needs this module: a 3-D input, a
    dilated pool, or an average over windows past the end (ceil_mode) that
    counts the padding."""
    dilated = node.op_type != "Conv" and any(d != 1 for d in node.attr("dilations", ()))
    ceil_counting_pads = node.op_type == "AveragePool" and node.attr("ceil_mode", 0) and \
        node.attr("count_include_pad", 0)
    return len(x.type.shape) == 5 or dilated or bool(ceil_counting_pads)


class _Geometry:
    """Kernel, strides, dilations, pads and output sizes of a window node
    over ``sizes`` (its spatial sizes), as ONNX defines them."""

    def __init__(self, node: OnnxNode, sizes, kernel):
        rank = len(sizes)
        self.kernel = list(kernel)
        self.strides = list(node.attr("strides", [1] * rank))
        self.dilations = list(node.attr("dilations", [1] * rank))
        pads = list(node.attr("pads", [0] * 2 * rank))
        auto_pad = node.text("auto_pad", "NOTSET")
        extents = [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations)]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            for i, size in enumerate(sizes):
                total = max(0, (math.ceil(size / self.strides[i]) - 1) * self.strides[i]
                            + extents[i] - size)
                small, large = total // 2, total - total // 2
                upper = auto_pad == "SAME_UPPER"
                pads[i], pads[rank + i] = (small, large) if upper else (large, small)
        elif auto_pad == "VALID":
            pads = [0] * 2 * rank
        self.begin, self.end = pads[:rank], pads[rank:]
        self.explicit_end = list(self.end)
        self.out = []
        for i, size in enumerate(sizes):
            span = size + self.begin[i] + self.end[i] - extents[i]
            count = span // self.strides[i] + 1
            if node.attr("ceil_mode", 0):
                count = -(-span // self.strides[i]) + 1
                if (count - 1) * self.strides[i] >= size + self.begin[i]:
                    count -= 1
                self.end[i] += max(0, (count - 1) * self.strides[i] - span)
            self.out.append(count)

    def taps(self, axis: int) -> np.ndarray:
        """[kernel, out] positions in the padded input along ``axis``."""
        return (np.arange(self.kernel[axis])[:, None] * self.dilations[axis]
                + np.arange(self.out[axis])[None, :] * self.strides[axis])


def _padded(state, node, x: Value, begin, end, fill: float) -> Value:
    """``x`` padded on its spatial axes with ``fill``."""
    if not any(begin) and not any(end):
        return x
    return state.step(node, "pad", {"x": x}, {"pads": (0, 0, *begin, 0, 0, *end),
                                              "value": fill})


def _windows(state, node, x: Value, geometry: _Geometry, fill: float) -> Value:
    """[N, C, *out, taps]: every window's elements."""
    value = _padded(state, node, x, geometry.begin, geometry.end, fill)
    rank = len(geometry.kernel)
    for axis in range(rank):  # each gather puts [kernel, out] where the axis was
        value = state.step(node, "gather", {"x": value, "indices": ConstValue(
            geometry.taps(axis).astype(np.int64))}, {"axis": 2 + 2 * axis})
    order = (0, 1, *(3 + 2 * a for a in range(rank)), *(2 + 2 * a for a in range(rank)))
    moved = state.step(node, "transpose", {"x": value}, {"perm": order})
    n, c = x.type.shape[:2]
    return view(state, node, moved, (n, c, *geometry.out, int(np.prod(geometry.kernel))))


def _covered(geometry: _Geometry, sizes, include_pad: bool) -> np.ndarray:
    """How many elements of the input (and of its explicit padding when
    ``include_pad``) each window covers."""
    inside = []
    for axis, size in enumerate(sizes):
        low = 0 if include_pad else geometry.begin[axis]
        high = geometry.begin[axis] + size + (geometry.explicit_end[axis] if include_pad else 0)
        positions = geometry.taps(axis)
        inside.append(((positions >= low) & (positions < high)).sum(axis=0))
    return functools.reduce(np.multiply, np.ix_(*inside))


def pool(state: GraphState, node: OnnxNode, kind: str) -> list[Value]:
    """MaxPool, AveragePool or LpPool (``kind``: max, avg, lp) by taps."""
    x = node.input(state, 0)
    shape = fixed_shape(node, x)
    geometry = _Geometry(node, shape[2:], node.attr("kernel_shape"))
    if kind == "max":
        fill = -math.inf if x.type.element.is_float else float(np.iinfo(
            x.type.element.numpy_dtype).min)
        return [state.step(node, "reduce", {"x": _windows(state, node, x, geometry, fill)},
                           {"fn": "max", "axes": (-1,), "keepdims": 0})]
    p = float(node.attr("p", 2)) if kind == "lp" else 1.0
    values = x if kind == "avg" else pointwise.binary(
        state, node, "pow", pointwise.unary(state, node, "abs", x), pointwise.scalar(p, x))
    total = state.step(node, "reduce", {"x": _windows(state, node, values, geometry, 0.0)},
                       {"fn": "sum", "axes": (-1,), "keepdims": 0})
    if kind == "lp":
        return [pointwise.binary(state, node, "pow", total, pointwise.scalar(1.0 / p, total))]
    counts = _covered(geometry, shape[2:], bool(node.attr("count_include_pad", 0)))
    divisor = ConstValue(np.maximum(counts, 1).astype(x.type.element.numpy_dtype))
    return [pointwise.binary(state, node, "div", total, divisor)]


def conv3d(state: GraphState, node: OnnxNode) -> list[Value]:
    """A 3-D Conv as one conv2d per tap of the kernel's depth."""
    x, w, b = (node.input(state, i) for i in range(3))
    n, c, depth, height, width = fixed_shape(node, x)
    kernel = fixed_shape(node, w)[2:]
    geometry = _Geometry(node, (depth, height, width), kernel)
    padded = _padded(state, node, x, (geometry.begin[0], 0, 0), (geometry.end[0], 0, 0), 0.0)
    total = None
    for tap in range(kernel[0]):
        rows = geometry.taps(0)[tap].astype(np.int64)
        slices = state.step(node, "gather", {"x": padded, "indices": ConstValue(rows)},
                            {"axis": 2})
        batch = view(state, node, state.step(node, "transpose", {"x": slices},
                                             {"perm": (0, 2, 1, 3, 4)}),
                     (n * geometry.out[0], c, height, width))
        inputs = {"x": batch, "w": _depth_tap(state, node, w, tap)}
        if b is not None and total is None:
            inputs["b"] = b
        attrs = {"stride": tuple(geometry.strides[1:]), "dilation": tuple(geometry.dilations[1:]),
                 "padding": (geometry.begin[1], geometry.begin[2], geometry.end[1],
                             geometry.end[2]), "groups": node.attr("group", 1)}
        plane = state.step(node, "conv2d", inputs, attrs)
        total = plane if total is None else pointwise.binary(state, node, "add", total, plane)
    out, rows, cols = total.type.shape[1:]
    joined = view(state, node, total, (n, geometry.out[0], out, rows, cols))
    return [state.step(node, "transpose", {"x": joined}, {"perm": (0, 2, 1, 3, 4)})]


def _depth_tap(state: GraphState, node: OnnxNode, w: Value, tap: int) -> Value:
    if isinstance(w, ConstValue):
        return ConstValue(np.ascontiguousarray(w.array[:, :, tap]))
    return state.step(node, "gather", {"x": w, "indices": ConstValue(np.int64(tap))},
                      {"axis": 2})

