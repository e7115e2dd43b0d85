"""ONNX's QuantizeLinear and DequantizeLinear as compositions of the
pointwise primitives: a scale and zero point (a scalar, one per index of
``axis``, or one per ``block_size`` elements along it) broadcast to the
input; integer results are rounded half to even and saturated to their
type, float8 results cast with ``saturate`` (cast op), as onnx's
reference does."""
from __future__ import annotations

import numpy as np

from ...ir.types import F32, F64, I32, scalar_type_of_dtype
from .names import ELEMENT_TYPES
from .pointwise import binary, cast, scalar, select, unary
from .products import matrix_product
from .reductions import reduce
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value

_FLOAT8 = ("f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz")


def _broadcast(state: GraphState, node: OnnxNode, value: Value, x: Value) -> Value:
    """A scale or zero point shaped to broadcast against ``x``."""
    shape, rank = value.type.shape, len(x.type.shape)
    if not shape:
        return value
    axis = node.attr("axis", 1) % rank
    block = node.attr("block_size", 0)
    if not block:
        dims = [1] * rank
        dims[axis] = shape[0]
        if len(shape) != 1:
            raise Unsupported(f"{node.op_type}: a scale of shape {value.type.shape} without "
                              "block_size", "give one scale per index of 'axis'")
        return state.step(node, "reshape", {"x": value}, {"shape": tuple(dims)})
    size = x.type.shape[axis]
    if not isinstance(size, int):
        raise Unsupported(f"{node.op_type}: blocks along an axis of symbolic size {size}",
                          "give the input fixed sizes")
    indices = ConstValue(np.arange(size, dtype=np.int64) // block)
    return state.step(node, "gather", {"x": value, "indices": indices}, {"axis": axis})


def _output_type(node: OnnxNode, zero_point: Value | None, default):
    if zero_point is not None:
        return zero_point.type.element
    chosen = node.attr("output_dtype", 0)
    if not chosen:
        return default
    element = ELEMENT_TYPES.get(chosen)
    if element is None:
        raise Unsupported(f"{node.op_type} to ONNX element type {chosen}",
                          "quantize to an integer, float8 or float4 type")
    return element


def quantize_linear(state: GraphState, node: OnnxNode) -> list[Value]:
    x, scale, zero_point = (node.input(state, i) for i in range(3))
    out = _output_type(node, zero_point, ELEMENT_TYPES[2])
    precision = node.attr("precision", 0)
    if precision:
        work = ELEMENT_TYPES[precision]
    else:
        work = scalar_type_of_dtype(np.result_type(x.type.element.numpy_dtype,
                                                   scale.type.element.numpy_dtype))
    scaled = binary(state, node, "div", cast(state, node, x, work),
                    cast(state, node, _broadcast(state, node, scale, x), work))
    if out.is_float:
        if out.name not in _FLOAT8 and zero_point is not None:
            point = cast(state, node, _broadcast(state, node, zero_point, x), work)
            scaled = binary(state, node, "add", scaled, point)
        return [cast(state, node, scaled, out, bool(node.attr("saturate", 1)))]
    rounded = cast(state, node, unary(state, node, "round", scaled), I32)
    if zero_point is not None:
        rounded = binary(state, node, "add", rounded,
                         cast(state, node, _broadcast(state, node, zero_point, x), I32))
    return [_saturated(state, node, rounded, out)]


def _saturated(state: GraphState, node: OnnxNode, value: Value, out) -> Value:
    """Whole numbers ``value`` clamped to integer type ``out``'s range, as ``out``."""
    bits = out.bits
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if out.is_signed else (
        0, (1 << bits) - 1)
    clipped = binary(state, node, "min", binary(state, node, "max", value, scalar(low, value)),
                     scalar(high, value))
    return cast(state, node, clipped, out)


def dequantize_linear(state: GraphState, node: OnnxNode) -> list[Value]:
    x, scale, zero_point = (node.input(state, i) for i in range(3))
    value = cast(state, node, x, F32)
    if zero_point is not None and x.type.element.is_int:
        point = cast(state, node, _broadcast(state, node, zero_point, x), F32)
        value = binary(state, node, "sub", value, point)
    scale_f32 = cast(state, node, _broadcast(state, node, scale, x), F32)
    product = binary(state, node, "mul", value, scale_f32)
    out = ELEMENT_TYPES.get(node.attr("output_dtype", 0)) or scale.type.element
    return [cast(state, node, product, out)]


def _centred(state: GraphState, node: OnnxNode, x: Value, zero_point: Value | None) -> Value:
    """``x - zero_point`` in i32 (a zero point per row of a matrix ``x``)."""
    value = cast(state, node, x, I32)
    if zero_point is None:
        return value
    point = cast(state, node, zero_point, I32)
    if point.type.shape and len(x.type.shape) >= 2 and point.type.shape[0] != 1 \
            and point.type.shape[0] == x.type.shape[-2]:
        point = state.step(node, "reshape", {"x": point}, {"shape": (point.type.shape[0], 1)})
    return binary(state, node, "sub", value, point)


def matmul_integer(state: GraphState, node: OnnxNode) -> list[Value]:
    """MatMulInteger: ``(a - a_zero_point) @ (b - b_zero_point)`` in i32."""
    a, b, a_point, b_point = (node.input(state, i) for i in range(4))
    return [matrix_product(state, node, _centred(state, node, a, a_point),
                           _centred(state, node, b, b_point))]


def qlinear_matmul(state: GraphState, node: OnnxNode) -> list[Value]:
    """QLinearMatMul: the i32 product of the centred operands, scaled by
    ``a_scale * b_scale / y_scale`` in f64 (numpy's promotion, as onnx's
    reference), moved by y's zero point, rounded and saturated."""
    a, a_scale, a_point, b, b_scale, b_point, y_scale, y_point = (
        node.input(state, i) for i in range(8))
    product = matrix_product(state, node, _centred(state, node, a, a_point),
                             _centred(state, node, b, b_point))
    if a_scale.type.shape and a_scale.type.shape[0] != 1:
        a_scale = state.step(node, "reshape", {"x": a_scale}, {"shape": (a_scale.type.shape[0], 1)})
    scale = binary(state, node, "div", binary(state, node, "mul", a_scale, b_scale), y_scale)
    value = binary(state, node, "mul", cast(state, node, product, F64),
                   cast(state, node, scale, F64))
    out = y_point.type.element if y_point is not None else a.type.element
    if y_point is not None:
        value = binary(state, node, "add", value, cast(state, node, y_point, F64))
    return [_saturated(state, node, unary(state, node, "round", value), out)]


def dynamic_quantize_linear(state: GraphState, node: OnnxNode) -> list[Value]:
    """DynamicQuantizeLinear: u8 values, their scale and zero point from the
    range of ``x`` and 0, as onnx's reference computes them (in f32)."""
    x = cast(state, node, node.input(state, 0), F32)
    high = binary(state, node, "max", reduce(state, node, "max", x, (), 0), scalar(0.0, x))
    low = binary(state, node, "min", reduce(state, node, "min", x, (), 0), scalar(0.0, x))
    spread = binary(state, node, "sub", high, low)
    spread = select(state, node, binary(state, node, "equal", spread, scalar(0.0, x)),
                    scalar(1.0, x), spread)
    y_scale = binary(state, node, "div", spread, scalar(255.0, x))
    start = binary(state, node, "sub", scalar(0.0, x), binary(state, node, "div", low, y_scale))
    start = binary(state, node, "min", binary(state, node, "max", start, scalar(0.0, x)),
                   scalar(255.0, x))
    point = unary(state, node, "round", start)
    moved = binary(state, node, "add", unary(state, node, "round", binary(
        state, node, "div", x, y_scale)), point)
    u8 = ELEMENT_TYPES[2]
    return [_saturated(state, node, moved, u8), y_scale, cast(state, node, point, u8)]


QUANTIZE_CONVERTERS = {
    "DynamicQuantizeLinear": dynamic_quantize_linear,
    "QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear,
    "MatMulInteger": matmul_integer, "QLinearMatMul": qlinear_matmul,
}
