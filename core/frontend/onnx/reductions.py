"""ONNX's reductions and what is built on them: Reduce* (a ``reduce``
node, with the means, norms and log-sums composed around it), ArgMax and
ArgMin, LogSoftmax, and the normalisations LayerNormalization,
RMSNormalization and MeanVarianceNormalization.
"""
from __future__ import annotations

import numpy as np

from .pointwise import binary, scalar, select, unary
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value

AXES_INPUT_SINCE = {"ReduceSum": 13}
"""Opset from which Reduce* take their axes as an input (18 for the rest)."""


def reduction_axes(state: GraphState, node: OnnxNode, opset: int) -> tuple[int, ...] | None:
    """The axes to reduce (() for all), or None for none at all
    (``noop_with_empty_axes`` with no axes given)."""
    if opset >= AXES_INPUT_SINCE.get(node.op_type, 18):
        given = len(node.inputs) > 1 and node.inputs[1]
        axes = tuple(int(a) for a in np.asarray(
            state.constant(node.inputs[1], f"{node.op_type}'s axes")).reshape(-1)) if given else ()
    else:
        axes = tuple(node.attr("axes", ()))
    if not axes and node.attr("noop_with_empty_axes", 0):
        return None
    return axes


def reduce(state: GraphState, node: OnnxNode, fn: str, x: Value, axes, keepdims=1) -> Value:
    return state.step(node, "reduce", {"x": x}, {"fn": fn, "axes": axes, "keepdims": keepdims})


def _count(x: Value, axes) -> int:
    rank = len(x.type.shape)
    dims = [x.type.shape[a % rank] for a in axes] if axes else list(x.type.shape)
    if not all(isinstance(d, int) for d in dims):
        raise Unsupported(f"a mean over sizes {dims} that are not fixed",
                          "give the reduced dimensions fixed sizes")
    return int(np.prod(dims))


def _reduce_converter(build):
    def convert(state: GraphState, node: OnnxNode, opset: int) -> list[Value]:
        x = node.input(state, 0)
        axes = reduction_axes(state, node, opset)
        keep = node.attr("keepdims", 1)
        if axes is None:  # nothing to reduce: the input, through the elementwise part
            return [build(state, node, x, None, keep)]
        return [build(state, node, x, axes, keep)]
    return convert


def _plain(fn: str):
    def build(state, node, x, axes, keep):
        return x if axes is None else reduce(state, node, fn, x, axes, keep)
    return build


def _sum_of(transform):
    def build(state, node, x, axes, keep):
        value = transform(state, node, x)
        return value if axes is None else reduce(state, node, "sum", value, axes, keep)
    return build


def _mean(state, node, x, axes, keep):
    if axes is None:
        return x
    total = reduce(state, node, "sum", x, axes, keep)
    return binary(state, node, "div", total, scalar(_count(x, axes), x))


def _square(state, node, x):
    return binary(state, node, "mul", x, x)


def _l2(state, node, x, axes, keep):
    return unary(state, node, "sqrt", _sum_of(_square)(state, node, x, axes, keep))


def _log_sum(state, node, x, axes, keep):
    return unary(state, node, "log", _plain("sum")(state, node, x, axes, keep))


def _log_sum_exp(state, node, x, axes, keep):
    if axes is None:
        return unary(state, node, "log", unary(state, node, "exp", x))
    top = reduce(state, node, "max", x, axes, 1)
    shifted = unary(state, node, "exp", binary(state, node, "sub", x, top))
    total = unary(state, node, "log", reduce(state, node, "sum", shifted, axes, keep))
    if not keep:
        top = reduce(state, node, "max", x, axes, 0)
    return binary(state, node, "add", total, top)


REDUCE_CONVERTERS = {
    "ReduceSum": _reduce_converter(_plain("sum")), "ReduceProd": _reduce_converter(_plain("prod")),
    "ReduceMax": _reduce_converter(_plain("max")), "ReduceMin": _reduce_converter(_plain("min")),
    "ReduceMean": _reduce_converter(_mean),
    "ReduceL1": _reduce_converter(_sum_of(lambda s, n, x: unary(s, n, "abs", x))),
    "ReduceL2": _reduce_converter(_l2), "ReduceSumSquare": _reduce_converter(_sum_of(_square)),
    "ReduceLogSum": _reduce_converter(_log_sum),
    "ReduceLogSumExp": _reduce_converter(_log_sum_exp),
}
"""ONNX op type -> converter taking the opset (the axes moved to an input)."""


def arg_reduce(fn: str):
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        attrs = {"fn": fn, "axis": node.attr("axis", 0), "keepdims": node.attr("keepdims", 1),
                 "select_last_index": node.attr("select_last_index", 0)}
        return [state.step(node, "arg_reduce", {"x": node.input(state, 0)}, attrs)]
    return convert


# along one axis --------------------------------------------------------------
def log_softmax(state: GraphState, node: OnnxNode, x: Value, axis: int) -> Value:
    """x - max - log(sum(exp(x - max))) along ``axis``."""
    top = reduce(state, node, "max", x, (axis,))
    shifted = binary(state, node, "sub", x, top)
    total = reduce(state, node, "sum", unary(state, node, "exp", shifted), (axis,))
    return binary(state, node, "sub", shifted, unary(state, node, "log", total))


def normalized(state: GraphState, node: OnnxNode, x: Value, axes, epsilon: float,
               center: bool = True) -> tuple[Value, Value, Value]:
    """(x - mean) / sqrt(var + epsilon) over ``axes`` (x / sqrt(mean(x^2) +
    epsilon) when not ``center``), with the mean and 1 / sqrt(var + eps)."""
    mean = _mean(state, node, x, axes, 1) if center else None
    centered = binary(state, node, "sub", x, mean) if center else x
    variance = _mean(state, node, _square(state, node, centered), axes, 1)
    inverse = unary(state, node, "reciprocal", unary(state, node, "sqrt", binary(
        state, node, "add", variance, scalar(epsilon, x))))
    return binary(state, node, "mul", centered, inverse), mean, inverse


def _scaled(state: GraphState, node: OnnxNode, value: Value, first: int) -> Value:
    scale = node.input(state, first)
    if scale is not None:
        value = binary(state, node, "mul", value, scale)
    bias = node.input(state, first + 1)
    if bias is not None:
        value = binary(state, node, "add", value, bias)
    return value


def layer_norm(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    rank = len(x.type.shape)
    axes = tuple(range(node.attr("axis", -1) % rank, rank))
    value, mean, inverse = normalized(state, node, x, axes, node.attr("epsilon", 1e-5))
    return [_scaled(state, node, value, 1), mean, inverse][:len(node.outputs)]


def rms_norm(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    rank = len(x.type.shape)
    axes = tuple(range(node.attr("axis", -1) % rank, rank))
    value, _, _ = normalized(state, node, x, axes, node.attr("epsilon", 1e-5), center=False)
    return [_scaled(state, node, value, 1)]


def mean_variance_norm(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    axes = tuple(node.attr("axes", (0, 2, 3)))
    return [normalized(state, node, x, axes, 1e-9)[0]]


def instance_norm(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    rank = len(x.type.shape)
    value, _, _ = normalized(state, node, x, tuple(range(2, rank)), node.attr("epsilon", 1e-5))
    return [_per_channel(state, node, value, rank)]


def _per_channel(state: GraphState, node: OnnxNode, value: Value, rank: int,
                 repeat: int = 1) -> Value:
    """``value * scale + bias`` with the node's inputs 1 and 2 given per
    channel (or per group of ``repeat`` channels)."""
    channel = (-1,) + (1,) * (rank - 2)
    for index, op in ((1, "mul"), (2, "add")):
        parameter = node.input(state, index)
        if isinstance(parameter, ConstValue):
            parameter = ConstValue(np.repeat(parameter.array.reshape(-1), repeat).reshape(channel))
        else:
            if repeat > 1:
                indices = ConstValue(np.arange(parameter.type.shape[0] * repeat) // repeat)
                parameter = state.step(node, "gather", {"x": parameter, "indices": indices},
                                       {"axis": 0})
            parameter = state.step(node, "reshape", {"x": parameter}, {"shape": channel})
        value = binary(state, node, op, value, parameter)
    return value


def group_norm(state: GraphState, node: OnnxNode) -> list[Value]:
    """GroupNormalization: the channels normalised in ``num_groups`` groups,
    then scaled per channel (opset 21; per group before)."""
    x = node.input(state, 0)
    shape, groups = x.type.shape, node.attr("num_groups")
    if not all(isinstance(d, int) for d in shape[1:]) or shape[1] % groups:
        raise Unsupported(f"GroupNormalization of {x.type} in {groups} groups",
                          "give fixed sizes, and channels a multiple of num_groups")
    grouped = state.step(node, "reshape", {"x": x}, {"shape": (0, groups, -1)})
    value, _, _ = normalized(state, node, grouped, (2,), node.attr("epsilon", 1e-5))
    value = state.step(node, "reshape", {"x": value}, {"shape": (0,) + tuple(shape[1:])})
    per_group = node.input(state, 1).type.shape[0] == groups != shape[1]
    return [_per_channel(state, node, value, len(shape), shape[1] // groups if per_group else 1)]


def lp_norm(state: GraphState, node: OnnxNode) -> list[Value]:
    """LpNormalization: ``x / ||x||_p`` along ``axis`` (p 1 or 2); 0 where
    the norm is 0."""
    x, axis, p = node.input(state, 0), node.attr("axis", -1), node.attr("p", 2)
    if p not in (1, 2):
        node.reject("p", p, "p=1 or p=2")
    if p == 1:
        norm = reduce(state, node, "sum", unary(state, node, "abs", x), (axis,))
    else:
        norm = unary(state, node, "sqrt", reduce(state, node, "sum", binary(
            state, node, "mul", x, x), (axis,)))
    zero = binary(state, node, "equal", norm, scalar(0, norm))
    return [select(state, node, zero, scalar(0, x), binary(state, node, "div", x, norm))]


NORM_CONVERTERS = {
    "LpNormalization": lp_norm,
    "ArgMax": arg_reduce("argmax"), "ArgMin": arg_reduce("argmin"),
    "LayerNormalization": layer_norm, "RMSNormalization": rms_norm,
    "MeanVarianceNormalization": mean_variance_norm,
    "InstanceNormalization": instance_norm, "GroupNormalization": group_norm,
}
