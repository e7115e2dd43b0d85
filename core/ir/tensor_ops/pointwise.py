"""The pointwise primitives: ``unary`` and ``binary`` (a scalar function
named by attribute ``fn``, scalar_functions.py), ``select`` (where) and
``cast``; inputs broadcast with numpy/ONNX rules, over every element type
the function takes.

    unary   x -> y          fn: neg abs sign exp log sqrt reciprocal floor ceil
                                round erf sin cos tan asin acos atan sinh cosh
                                asinh acosh atanh not bitnot isnan isinf
    binary  a, b -> y       fn: add sub mul div pow max min mod fmod and or xor
                                bitand bitor bitxor shl shr equal not_equal less
                                less_equal greater greater_equal
    select  cond, a, b -> y y = cond ? a : b
    cast    x -> y          to: the element type of y (bool, i8 ... f64, and the
                            narrow storage types, storage.py); saturate
    bitcast x -> y          to: a type of x's element size; y holds x's bits

Integer ``div`` and ``fmod`` truncate toward zero (C, and ONNX's Div);
``mod`` follows the divisor's sign (Python, ONNX's Mod with fmod=0);
a shift by the bit width or more gives 0 (ONNX BitShift).  Every lowering runs one
instance per output element.  ``add`` and ``mul`` as named ops
(elementwise.py) are what fusion and accelerators match; front ends use
them for float sums and products.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..kernel import Bitcast, Expr, Select
from ..types import SCALAR_TYPES, BufferType, ScalarType
from .dims import broadcast_shape
from .lowering import KernelBuilder, replication_over
from .scalar_functions import BINARY, UNARY, ScalarFunction, cast_expr
from .spec import REQUIRED, OpContext, TensorOpSpec

def _function(ctx: OpContext, table: dict[str, ScalarFunction]) -> ScalarFunction:
    name = ctx.attrs["fn"]
    if name not in table:
        ctx._bad_attr("fn", "one of " + ", ".join(table))
    return table[name]


def _checked_element(ctx: OpContext, function: ScalarFunction) -> ScalarType:
    element = ctx.same_element()
    if not function.accepts(element):
        ctx.fail(f"{function.name} takes {function.domain} inputs, got {element}",
                 f"cast the input to a {function.domain} type", next(iter(ctx.types)))
    return element


def lower_pointwise(b: KernelBuilder, ports: tuple[str, ...],
                    value: Callable[..., Expr]) -> tuple[Expr, ...]:
    """Store ``value(*loads)`` at every element of ``y``; inputs of y's shape
    are read flat, the others broadcast."""
    out_dims = b.dims("y")
    shape = b.types["y"].shape
    if all(b.types[port].shape == shape for port in ports):
        i = b.instance()
        loads = [b.load(port, i) for port in ports]
        b.store("y", i, value(*loads))
        return replication_over(out_dims)
    i, at, replication = b.broadcast_grid(ports)
    b.store("y", i, value(*(b.load(port, at[port]) for port in ports)))
    return replication


# unary, binary -------------------------------------------------------------
def _function_op(name: str, ports: tuple[str, ...], table: dict[str, ScalarFunction],
                 summary: str) -> TensorOpSpec:
    def infer(ctx: OpContext) -> dict[str, BufferType]:
        function = _function(ctx, table)
        element = _checked_element(ctx, function)
        return {"y": BufferType(function.result(element), broadcast_shape(ctx, ports))}

    def evaluate(ctx: OpContext, x: dict) -> dict:
        return {"y": _function(ctx, table).numpy(*(x[port] for port in ports))}

    def lower(b: KernelBuilder) -> tuple[Expr, ...]:
        return lower_pointwise(b, ports, _function(b.ctx, table).kernel)

    return TensorOpSpec(name, ports, ("y",), infer, evaluate, lower, attrs={"fn": REQUIRED},
                        summary=summary)


UNARY_OP = _function_op("unary", ("x",), UNARY, "y = fn(x) for a scalar function fn")
BINARY_OP = _function_op("binary", ("a", "b"), BINARY,
                         "y = fn(a, b) with numpy/ONNX broadcasting")


# select ----------------------------------------------------------------------
def _infer_select(ctx: OpContext) -> dict[str, BufferType]:
    if not ctx.element("cond").is_bool:
        ctx.fail(f"'cond' must be bool, got {ctx.element('cond')}",
                 "compare, or cast the condition to bool", "cond")
    if ctx.element("a") != ctx.element("b"):
        ctx.fail(f"'a' is {ctx.element('a')} but 'b' is {ctx.element('b')}",
                 "cast the two choices to one element type", "b")
    return {"y": BufferType(ctx.element("a"), broadcast_shape(ctx, ("cond", "a", "b")))}


SELECT = TensorOpSpec(
    "select", ("cond", "a", "b"), ("y",), _infer_select,
    lambda ctx, x: {"y": np.where(x["cond"], x["a"], x["b"])},
    lambda b: lower_pointwise(b, ("cond", "a", "b"), Select),
    summary="y = cond ? a : b, with numpy/ONNX broadcasting")


# cast ------------------------------------------------------------------------
def target_type(ctx: OpContext) -> ScalarType:
    to = ctx.attrs["to"]
    if to not in SCALAR_TYPES:
        ctx._bad_attr("to", "one of " + ", ".join(SCALAR_TYPES))
    return SCALAR_TYPES[to]


def _evaluate_cast(ctx: OpContext, x: dict) -> dict:
    to = target_type(ctx).numpy_dtype
    value = x["x"]
    if value.dtype.kind == "f" and to.kind in "iu":
        # kernel IR's float-to-int conversion truncates; NaN and values out
        # of range have no defined result (numpy's is kept)
        with np.errstate(invalid="ignore"):
            return {"y": np.trunc(value).astype(to)}
    return {"y": value.astype(to)}


CAST = TensorOpSpec(
    "cast", ("x",), ("y",),
    lambda ctx: {"y": BufferType(target_type(ctx), ctx.shape("x"))}, _evaluate_cast,
    lambda b: lower_pointwise(b, ("x",), lambda x: cast_expr(x, target_type(b.ctx))),
    attrs={"to": REQUIRED, "saturate": True},
    summary="y = x converted to element type 'to' (a float8 'to' with saturate: values out "
            "of range clamp to its largest finite ones)")

# bitcast -----------------------------------------------------------------------
def _infer_bitcast(ctx: OpContext) -> dict[str, BufferType]:
    to, element = target_type(ctx), ctx.element("x")
    if to.itemsize != element.itemsize or to.bits != element.bits and not (
            to.is_bool or element.is_bool):
        ctx.fail(f"bitcast of {element} to {to}: their elements differ in size",
                 "bitcast between types of one width (f32 and i32, f16 and u16 ...)", "x")
    return {"y": BufferType(to, ctx.shape("x"))}


def _bits(value: Expr, to: ScalarType) -> Expr:
    """``value``'s bits (a storage integer or bool) as ``to``'s storage."""
    target = to.storage_type
    if value.type == target:
        return value
    if value.type.is_bool or target.is_bool:
        return cast_expr(value, target)
    return Bitcast(value, target)


BITCAST = TensorOpSpec(
    "bitcast", ("x",), ("y",), _infer_bitcast,
    lambda ctx, x: {"y": x["x"].view(target_type(ctx).numpy_dtype)},
    lambda b: lower_pointwise(b, ("x",), lambda x: _bits(x, target_type(b.ctx))),
    attrs={"to": REQUIRED}, moves_bits=True,
    summary="y = the bits of x read as element type 'to' (of the same size)")

OPS = (UNARY_OP, BINARY_OP, SELECT, CAST, BITCAST)
