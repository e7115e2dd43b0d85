"""``elementwise``: a chain of elementwise ops as one op, so that a value
goes through memory once instead of once per op (made by the pass
``fuse-elementwise``; written by hand too).

Ports ``x0, x1, ... xk``: ``x0`` is the chain's input and has the result's
shape; ``x1 ... xk`` are the other operands of its binary steps, each
broadcasting (numpy rules) to that shape.  Attribute ``steps`` lists the
steps, applied to the running value ``v`` (starting as ``x0``) in order::

    ("add", k)                  v = v + xk
    ("mul", k)                  v = v * xk
    ("relu",) ("tanh",) ("sigmoid",)
    ("clipped_relu", min, max)  v = min(max(v, min), max)
    ("unary", fn)               v = fn(v), fn a float function of the op unary
    ("binary", fn, k)           v = fn(v, xk), fn of the op binary with a float result
    ("rbinary", fn, k)          v = fn(xk, v)

e.g. ``steps = [["add", 1], ["relu"]]`` is ResNet's ``relu(conv + x)``, and
GELU ``x * (erf(x * c) + 1) * 0.5`` reads x twice, as x0 and x1:
``[["mul", 2], ["unary", "erf"], ["add", 3], ["mul", 1], ["mul", 4]]``.
Each step rounds to the element type as the separate op would, so the
chain computes exactly what the unfused ops compute (a target may contract
a product and a sum that now meet in one kernel into a fused multiply-add,
as it does within any op).
"""
from __future__ import annotations

import numpy as np

from ..kernel import Expr
from ..types import BufferType
from .activation import apply_kernel, apply_numpy
from .dims import broadcast_shape
from .lowering import KernelBuilder, maximum, minimum, replication_over
from .scalar_functions import BINARY, UNARY
from .spec import REQUIRED, OpContext, TensorOpSpec

BINARY_STEPS = ("add", "mul")
UNARY_STEPS = ("relu", "tanh", "sigmoid")
FUNCTION_STEPS = ("binary", "rbinary")
STEP_FORMS = ('["add", k]', '["mul", k]', '["relu"]', '["tanh"]', '["sigmoid"]',
              '["clipped_relu", min, max]', '["unary", fn]', '["binary", fn, k]',
              '["rbinary", fn, k]')

FLOAT_UNARY = tuple(name for name, f in UNARY.items()
                    if f.domain in ("float", "numeric") and not f.boolean_result)
"""The functions of the op ``unary`` a chain step applies to floats."""
FLOAT_BINARY = tuple(name for name, f in BINARY.items()
                     if f.domain in ("float", "numeric") and not f.boolean_result)
"""The functions of the op ``binary`` with a float result."""


def step_operand(step: tuple) -> int | None:
    """The index k of the operand port ``xk`` a step reads, or None."""
    if step[0] in BINARY_STEPS:
        return step[1]
    if step[0] in FUNCTION_STEPS:
        return step[2]
    return None


def function_arguments(step: tuple, value, operand) -> tuple:
    """The arguments of a ``binary`` or ``rbinary`` step's function: the
    running value first, or (rbinary) the operand first."""
    return (value, operand) if step[0] == "binary" else (operand, value)


def renumbered(step: tuple, offset: int) -> tuple:
    """``step`` reading operand port x(k + offset) instead of xk."""
    if step[0] in BINARY_STEPS:
        return (step[0], step[1] + offset)
    if step[0] in FUNCTION_STEPS:
        return (step[0], step[1], step[2] + offset)
    return step


def chain_steps(ctx: OpContext) -> tuple[tuple, ...]:
    """The checked ``steps`` of this use of the op; every operand port
    x1 ... xk is used by some step."""
    steps = ctx.attrs["steps"]
    operands = len(ctx.types) - 1
    if not isinstance(steps, tuple) or not steps or not all(_valid(s, operands) for s in steps):
        ctx._bad_attr("steps", f"a non-empty list of steps, each one of {', '.join(STEP_FORMS)}"
                               f" with k in 1..{operands}")
    used = {step_operand(step) for step in steps}
    for index in range(1, operands + 1):
        if index not in used:
            ctx.fail(f"input 'x{index}' is read by no step", f"add a step reading x{index} or "
                     "remove the input", f"x{index}")
    return steps


def _valid(step, operands: int) -> bool:
    if not isinstance(step, tuple) or not step:
        return False
    name, args = step[0], step[1:]
    if name in BINARY_STEPS:
        return len(args) == 1 and type(args[0]) is int and 1 <= args[0] <= operands
    if name in UNARY_STEPS:
        return not args
    if name == "clipped_relu":
        return len(args) == 2 and all(type(a) in (int, float) for a in args)
    if name == "unary":
        return len(args) == 1 and args[0] in FLOAT_UNARY
    if name in FUNCTION_STEPS:
        return (len(args) == 2 and args[0] in FLOAT_BINARY and type(args[1]) is int
                and 1 <= args[1] <= operands)
    return False


def _infer(ctx: OpContext) -> dict[str, BufferType]:
    element = ctx.float_element()
    chain_steps(ctx)
    result = ctx.shape("x0")
    for port in list(ctx.types)[1:]:
        if broadcast_shape(ctx, ("x0", port)) != result:
            ctx.fail(f"input '{port}' of shape {ctx.types[port]} does not broadcast to the "
                     f"shape of 'x0' {ctx.types['x0']}",
                     "give the operand a shape that broadcasts to x0's", port)
    return {"y": BufferType(element, result)}


def _evaluate(ctx: OpContext, x: dict) -> dict:
    value = x["x0"]
    kind = value.dtype.type
    for step in chain_steps(ctx):
        name = step[0]
        if name == "add":
            value = np.add(value, x[f"x{step[1]}"])
        elif name == "mul":
            value = np.multiply(value, x[f"x{step[1]}"])
        elif name == "clipped_relu":
            value = np.minimum(np.maximum(value, kind(step[1])), kind(step[2]))
        elif name == "unary":
            value = UNARY[step[1]].numpy(value)
        elif name in FUNCTION_STEPS:
            value = BINARY[step[1]].numpy(*function_arguments(step, value, x[f"x{step[2]}"]))
        else:
            value = apply_numpy(name, value)
    return {"y": value}


def _lower(b: KernelBuilder) -> tuple[Expr, ...]:
    out_dims = b.dims("y")
    shape = b.types["y"].shape
    operands = [port for port in b.types if port not in ("x0", "y")]
    if all(b.types[port].shape == shape for port in operands):
        i, replication = b.instance(), replication_over(out_dims)
        load = lambda port: b.load(port, i)  # noqa: E731
    else:
        i, at, replication = b.broadcast_grid(["x0", *operands])
        load = lambda port: b.load(port, at[port])  # noqa: E731
    value = b.let("v", load("x0"))
    for step in chain_steps(b.ctx):
        b.assign(value, _step_expr(b, step, value, load))
    b.store("y", i, value)
    return replication


def _step_expr(b: KernelBuilder, step: tuple, value: Expr, load) -> Expr:
    name = step[0]
    if name == "add":
        return value + load(f"x{step[1]}")
    if name == "mul":
        return value * load(f"x{step[1]}")
    if name == "clipped_relu":
        return minimum(maximum(value, b.const(float(step[1]))), b.const(float(step[2])))
    if name == "unary":
        return UNARY[step[1]].kernel(value)
    if name in FUNCTION_STEPS:
        return BINARY[step[1]].kernel(*function_arguments(step, value, load(f"x{step[2]}")))
    return apply_kernel(name, value)


ELEMENTWISE = TensorOpSpec(
    "elementwise", ("x0",), ("y",), _infer, _evaluate, _lower, attrs={"steps": REQUIRED},
    variadic=True, summary="y = a chain of elementwise functions applied to x0")

OPS = (ELEMENTWISE,)
