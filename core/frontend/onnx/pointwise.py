"""ONNX's elementwise operators: each a ``unary``, ``binary``, ``select``
or ``cast`` node, or a composition of them (the activations that ONNX
defines by a formula: Elu, Gelu, HardSwish, Softplus ...).

A converter returns the Values of the node's outputs; compositions name
their nodes after the ONNX node (``GraphState.step``).
"""
from __future__ import annotations

import math

import numpy as np

from .names import ELEMENT_TYPES
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value

UNARY_FUNCTIONS = {
    "Neg": "neg", "Abs": "abs", "Sign": "sign", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
    "Reciprocal": "reciprocal", "Floor": "floor", "Ceil": "ceil", "Round": "round",
    "Erf": "erf", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
    "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh",
    "Atanh": "atanh", "Not": "not", "BitwiseNot": "bitnot", "IsNaN": "isnan",
}
BINARY_FUNCTIONS = {
    "Div": "div", "Equal": "equal", "Less": "less", "LessOrEqual": "less_equal",
    "Greater": "greater", "GreaterOrEqual": "greater_equal", "And": "and", "Or": "or",
    "Xor": "xor", "BitwiseAnd": "bitand", "BitwiseOr": "bitor", "BitwiseXor": "bitxor",
}
VARIADIC_FUNCTIONS = {"Max": "max", "Min": "min", "Sum": "add"}


def scalar(value, like: Value) -> ConstValue:
    """A rank-0 constant of ``like``'s element type."""
    return ConstValue(np.array(value, dtype=like.type.element.numpy_dtype))


def unary(state: GraphState, node: OnnxNode, fn: str, x: Value) -> Value:
    return state.step(node, "unary", {"x": x}, {"fn": fn})


def binary(state: GraphState, node: OnnxNode, fn: str, a: Value, b: Value) -> Value:
    if fn in ("add", "mul") and a.type.element.is_float:
        return state.step(node, fn, {"a": a, "b": b})  # the named ops fusion matches
    return state.step(node, "binary", {"a": a, "b": b}, {"fn": fn})


def select(state: GraphState, node: OnnxNode, cond: Value, a: Value, b: Value) -> Value:
    return state.step(node, "select", {"cond": cond, "a": a, "b": b})


def cast(state: GraphState, node: OnnxNode, x: Value, element, saturate: bool = True) -> Value:
    """``x`` as ``element`` values (``saturate``: see the cast op)."""
    if x.type.element == element:
        return x
    attrs = {"to": element.name} if saturate else {"to": element.name, "saturate": False}
    return state.step(node, "cast", {"x": x}, attrs)


def _unary_converter(fn: str):
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        return [unary(state, node, fn, node.input(state, 0))]
    return convert


def _binary_converter(fn: str):
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        return [binary(state, node, fn, node.input(state, 0), node.input(state, 1))]
    return convert


def _variadic_converter(fn: str):
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        values = [state.value(name) for name in node.inputs if name]
        result = values[0]
        for value in values[1:]:
            result = binary(state, node, fn, result, value)
        return [result]
    return convert


def sub(state: GraphState, node: OnnxNode) -> list[Value]:
    a, b = node.input(state, 0), node.input(state, 1)
    if isinstance(b, ConstValue) and a.type.element.is_float:
        # a + (-b): negation is exact, and add is the op fusion matches
        return [binary(state, node, "add", a, ConstValue(-b.array))]
    return [state.step(node, "binary", {"a": a, "b": b}, {"fn": "sub"})]


def mean(state: GraphState, node: OnnxNode) -> list[Value]:
    total = _variadic_converter("add")(state, node)[0]
    count = len([name for name in node.inputs if name])
    return [binary(state, node, "div", total, scalar(count, total))]


def mod(state: GraphState, node: OnnxNode) -> list[Value]:
    fmod = bool(node.attr("fmod", 0))
    return [binary(state, node, "fmod" if fmod else "mod", node.input(state, 0),
                   node.input(state, 1))]


def pow_(state: GraphState, node: OnnxNode) -> list[Value]:
    """Pow: the exponent is cast to the base's type; an integer base is
    raised in f64 and the result cast back."""
    base, exponent = node.input(state, 0), node.input(state, 1)
    element = base.type.element
    work = element if element.is_float else ELEMENT_TYPES[11]
    if isinstance(exponent, ConstValue):
        exponent = ConstValue(exponent.array.astype(work.numpy_dtype))
    else:
        exponent = cast(state, node, exponent, work)
    result = state.step(node, "binary", {"a": cast(state, node, base, work), "b": exponent},
                        {"fn": "pow"})
    return [cast(state, node, result, element)]


def bit_shift(state: GraphState, node: OnnxNode) -> list[Value]:
    direction = node.text("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        node.reject("direction", direction, "direction LEFT or RIGHT")
    fn = "shl" if direction == "LEFT" else "shr"
    return [binary(state, node, fn, node.input(state, 0), node.input(state, 1))]


def where(state: GraphState, node: OnnxNode) -> list[Value]:
    return [select(state, node, *(node.input(state, i) for i in range(3)))]


def _target_type(node: OnnxNode, fix: str):
    """The element type attribute ``to`` names; Unsupported with ``fix``."""
    element = ELEMENT_TYPES.get(node.attr("to"))
    if element is None:
        raise Unsupported(f"{node.op_type} to ONNX element type {node.attr('to')} is not "
                          "supported", fix)
    return element


def cast_node(state: GraphState, node: OnnxNode) -> list[Value]:
    element = _target_type(node, "cast to bool, an integer, float, bfloat16, float8 or "
                                 "float4 type")
    return [_saturated_cast(state, node, element)]


def bit_cast(state: GraphState, node: OnnxNode) -> list[Value]:
    element = _target_type(node, "bitcast to a numeric type of the input's size")
    return [state.step(node, "bitcast", {"x": node.input(state, 0)}, {"to": element.name})]


def cast_like(state: GraphState, node: OnnxNode) -> list[Value]:
    return [_saturated_cast(state, node, node.input(state, 1).type.element)]


def _saturated_cast(state: GraphState, node: OnnxNode, element) -> Value:
    return cast(state, node, node.input(state, 0), element, bool(node.attr("saturate", 1)))


def is_inf(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    negative, positive = node.attr("detect_negative", 1), node.attr("detect_positive", 1)
    if negative and positive:
        return [unary(state, node, "isinf", x)]
    # +inf alone, -inf alone, or neither (NaN equals nothing)
    value = math.inf if positive else -math.inf if negative else math.nan
    return [binary(state, node, "equal", x, scalar(value, x))]


# activations ONNX defines by a formula --------------------------------------
def _activation(formula):
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        x = node.input(state, 0)
        if not x.type.element.is_float:
            raise Unsupported(f"{node.op_type} on {x.type.element} values",
                              "cast the input to a float type")
        return [formula(_Formula(state, node, x), node)]
    return convert


class _Formula:
    """Builds one activation's nodes: ``f.exp(v)``, ``f.add(a, b)``,
    ``f.c(0.5)`` (a constant of x's type) ..."""

    def __init__(self, state: GraphState, node: OnnxNode, x: Value):
        self.state, self.node, self.x = state, node, x

    def c(self, value) -> ConstValue:
        return scalar(value, self.x)

    def __getattr__(self, fn: str):
        state, node = self.state, self.node
        if fn == "select":
            return lambda cond, a, b: select(state, node, cond, a, b)
        if fn == "clip":
            return lambda v, low, high: state.step(node, "clipped_relu", {"x": v},
                                                   {"min": low, "max": high})
        if fn in ("tanh", "sigmoid", "relu"):
            return lambda v: state.step(node, fn, {"x": v})
        if fn in ("add", "mul", "sub", "div", "max", "min", "less", "greater", "less_equal"):
            return lambda a, b: binary(state, node, fn, a, b)
        return lambda v: unary(state, node, fn, v)


def _elu(f: _Formula, node: OnnxNode) -> Value:
    alpha = node.attr("alpha", 1.0)
    negative = f.mul(f.sub(f.exp(f.x), f.c(1.0)), f.c(alpha))
    return f.select(f.less(f.x, f.c(0.0)), negative, f.x)


def _celu(f: _Formula, node: OnnxNode) -> Value:
    alpha = node.attr("alpha", 1.0)
    negative = f.mul(f.sub(f.exp(f.div(f.x, f.c(alpha))), f.c(1.0)), f.c(alpha))
    return f.add(f.max(f.x, f.c(0.0)), f.min(negative, f.c(0.0)))


def _selu(f: _Formula, node: OnnxNode) -> Value:
    alpha, gamma = node.attr("alpha", 1.67326319217681884765625), node.attr(
        "gamma", 1.05070102214813232421875)
    negative = f.sub(f.mul(f.exp(f.x), f.c(alpha)), f.c(alpha))
    return f.mul(f.select(f.less_equal(f.x, f.c(0.0)), negative, f.x), f.c(gamma))


def _leaky_relu(f: _Formula, node: OnnxNode) -> Value:
    slope = np.array([node.attr("alpha", 0.01)], dtype=f.x.type.element.numpy_dtype)
    return f.state.step(node, "prelu", {"x": f.x, "slope": ConstValue(slope)})


def _thresholded_relu(f: _Formula, node: OnnxNode) -> Value:
    return f.select(f.greater(f.x, f.c(node.attr("alpha", 1.0))), f.x, f.c(0.0))


def _hard_sigmoid(f: _Formula, node: OnnxNode, alpha=None, beta=None) -> Value:
    alpha = node.attr("alpha", 0.2) if alpha is None else alpha
    beta = node.attr("beta", 0.5) if beta is None else beta
    return f.clip(f.add(f.mul(f.x, f.c(alpha)), f.c(beta)), 0.0, 1.0)


def _hard_swish(f: _Formula, node: OnnxNode) -> Value:
    return f.mul(f.x, _hard_sigmoid(f, node, 1 / 6, 0.5))


def _softplus_of(f: _Formula, v: Value) -> Value:
    # max(v, 0) + log(1 + exp(-|v|)): log(1 + exp(v)) without overflow
    return f.add(f.max(v, f.c(0.0)), f.log(f.add(f.exp(f.neg(f.abs(v))), f.c(1.0))))


def _softsign(f: _Formula, node: OnnxNode) -> Value:
    return f.div(f.x, f.add(f.abs(f.x), f.c(1.0)))


def _mish(f: _Formula, node: OnnxNode) -> Value:
    return f.mul(f.x, f.tanh(_softplus_of(f, f.x)))


def _gelu(f: _Formula, node: OnnxNode) -> Value:
    approximate = node.text("approximate", "none")
    if approximate == "tanh":
        cube = f.mul(f.mul(f.x, f.x), f.x)
        inner = f.mul(f.add(f.x, f.mul(cube, f.c(0.044715))), f.c(math.sqrt(2 / math.pi)))
        half = f.add(f.tanh(inner), f.c(1.0))
    elif approximate == "none":
        half = f.add(f.erf(f.mul(f.x, f.c(1 / math.sqrt(2)))), f.c(1.0))
    else:
        node.reject("approximate", approximate, "approximate 'none' or 'tanh'")
    return f.mul(f.mul(f.x, half), f.c(0.5))


def _shrink(f: _Formula, node: OnnxNode) -> Value:
    bias, lambd = node.attr("bias", 0.0), node.attr("lambd", 0.5)
    upper = f.select(f.greater(f.x, f.c(lambd)), f.sub(f.x, f.c(bias)), f.c(0.0))
    return f.select(f.less(f.x, f.c(-lambd)), f.add(f.x, f.c(bias)), upper)


def _swish(f: _Formula, node: OnnxNode) -> Value:
    return f.mul(f.x, f.sigmoid(f.mul(f.x, f.c(node.attr("alpha", 1.0)))))


POINTWISE_CONVERTERS = {
    **{op: _unary_converter(fn) for op, fn in UNARY_FUNCTIONS.items()},
    **{op: _binary_converter(fn) for op, fn in BINARY_FUNCTIONS.items()},
    **{op: _variadic_converter(fn) for op, fn in VARIADIC_FUNCTIONS.items()},
    "Sub": sub, "Mean": mean, "Mod": mod, "Pow": pow_, "BitShift": bit_shift, "Where": where,
    "Cast": cast_node, "CastLike": cast_like, "BitCast": bit_cast, "IsInf": is_inf,
    "Elu": _activation(_elu), "Celu": _activation(_celu), "Selu": _activation(_selu),
    "LeakyRelu": _activation(_leaky_relu), "ThresholdedRelu": _activation(_thresholded_relu),
    "HardSigmoid": _activation(_hard_sigmoid), "HardSwish": _activation(_hard_swish),
    "Softplus": _activation(lambda f, node: _softplus_of(f, f.x)),
    "Softsign": _activation(_softsign), "Mish": _activation(_mish),
    "Gelu": _activation(_gelu), "Shrink": _activation(_shrink), "Swish": _activation(_swish),
    "SwiGLU": _activation(lambda f, node: f.mul(_swish(f, node), node.input(f.state, 1))),
}
"""ONNX op type -> converter, for the elementwise operators."""
