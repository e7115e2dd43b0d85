"""Binding shape symbols to sizes and sizing a node's outputs and
replication: the rules every executor (interpreter, runtime, back ends)
shares.

A node's scope holds the shape symbols of its buffer ports, bound from the
arrays it receives, and its integer scalar ``in`` ports.  Out ports are
allocated with shapes from that scope; replication sizes are evaluated in it.
"""
from __future__ import annotations

import functools
import math
import os
from typing import Any, Mapping

import numpy as np

from ..errors import Diagnostic, ExecutionError, Location
from .kernel import Binary, Cast, Const, Expr, Intrinsic, Unary, Var
from .parameter import Parameter
from .types import BufferType


MEMORY_LIMIT_VARIABLE = "HPVM_MEMORY_LIMIT"


def memory_limit() -> int:
    """Bytes one allocation may take: ``$HPVM_MEMORY_LIMIT`` (a number of
    bytes, with an optional K, M, G or T), else this machine's memory."""
    text = os.environ.get(MEMORY_LIMIT_VARIABLE, "").strip().upper()
    if text:
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1], 1)
        try:
            return int(float(text.rstrip("KMGT")) * scale)
        except ValueError:
            pass
    return _physical_memory()


@functools.cache
def _physical_memory() -> int:
    """Asked once: checks run on every allocation of every run."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def format_bytes(count: int) -> str:
    """``count`` bytes for a person: ``1.5 GiB``, ``7.3e+13 TiB``."""
    value = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"


def check_allocation(shape, itemsize: int, where: Location, what: str) -> None:
    """ExecutionError at ``where`` when ``shape`` (of ``itemsize``-byte
    elements) has a negative size or needs more than ``memory_limit()``;
    ``what`` names it (``output 'y'``)."""
    if any(size < 0 for size in shape):
        raise ExecutionError(Diagnostic(where, f"{what} would have the negative shape "
                                               f"{list(shape)}", "check the sizes it is made from"))
    needed = math.prod(int(size) for size in shape) * itemsize
    limit = memory_limit()
    if needed > limit:
        raise ExecutionError(Diagnostic(
            where, f"{what} needs {format_bytes(needed)} (shape {list(shape)} of {itemsize}-byte "
                   f"elements), more than the {format_bytes(limit)} allowed",
            f"use smaller sizes, or raise ${MEMORY_LIMIT_VARIABLE}"))


def bind_symbols(params: tuple[Parameter, ...], values: Mapping[str, Any],
                 where: Location) -> dict[str, int]:
    """Shape-symbol values of a scope from the given port values.

    Integer scalar in-ports define their own name; buffer ports that are
    read bind their symbolic dims from the array's shape.  Two sources
    disagreeing about one symbol is an ExecutionError at ``where``.
    """
    symbols: dict[str, int] = {}
    origin: dict[str, str] = {}

    def define(name: str, value: int, source: str) -> None:
        if name in symbols and symbols[name] != value:
            raise ExecutionError(Diagnostic(
                where, f"size '{name}' is {symbols[name]} from {origin[name]} "
                f"but {value} from {source}",
                "pass arrays whose shapes agree on every shared size symbol"))
        symbols.setdefault(name, value)
        origin.setdefault(name, source)

    for p in params:
        if p.name not in values:
            continue
        value = values[p.name]
        if not p.is_buffer:
            if p.type.is_int:
                define(p.name, int(value), f"parameter '{p.name}'")
            continue
        if not p.reads or p.type.shape is None:
            continue
        shape = value.shape if hasattr(value, "shape") else np.shape(value)
        if len(shape) != len(p.type.shape):
            raise ExecutionError(Diagnostic(
                Location(**{**where.__dict__, "port": p.name}),
                f"expects a rank-{len(p.type.shape)} array of type {p.type}, "
                f"got shape {shape}", f"pass an array of shape {p.type.shape}"))
        for dim, actual in zip(p.type.shape, shape):
            if isinstance(dim, str):
                define(dim, int(actual), f"the shape of '{p.name}'")
            elif dim != actual:
                raise ExecutionError(Diagnostic(
                    Location(**{**where.__dict__, "port": p.name}),
                    f"expects shape {list(p.type.shape)}, got {list(shape)}",
                    f"pass an array of type {p.type}"))
    return symbols


def output_shape(param: Parameter, symbols: Mapping[str, int], where: Location) -> tuple[int, ...]:
    """The concrete shape of out-port ``param`` in a scope."""
    assert isinstance(param.type, BufferType)
    if param.type.shape is None:
        raise ExecutionError(Diagnostic(
            Location(**{**where.__dict__, "port": param.name}),
            f"output has no shape ({param.type}), so it cannot be allocated",
            "give the output a shape, e.g. f32[N]"))
    missing = [s for s in param.type.symbols if s not in symbols]
    if missing:
        raise ExecutionError(Diagnostic(
            Location(**{**where.__dict__, "port": param.name}),
            f"output size {', '.join(missing)} is not known from the inputs",
            "use only sizes of input buffers or integer scalar inputs in output shapes"))
    shape = param.type.concrete_shape(dict(symbols))
    check_allocation(shape, param.type.element.numpy_dtype.itemsize,
                     Location(**{**where.__dict__, "port": param.name}), f"output '{param.name}'")
    return shape


def evaluate_size(expr: Expr, symbols: Mapping[str, int]) -> int:
    """The integer value of a replication-size expression in a scope."""
    if isinstance(expr, Const):
        return int(expr.value)
    if isinstance(expr, Var):
        return int(symbols[expr.name])
    if isinstance(expr, Cast):
        return evaluate_size(expr.value, symbols)
    if isinstance(expr, Unary) and expr.op == "neg":
        return -evaluate_size(expr.operand, symbols)
    if isinstance(expr, Binary):
        a, b = evaluate_size(expr.lhs, symbols), evaluate_size(expr.rhs, symbols)
        return _INTEGER_OPS[expr.op](a, b)
    if isinstance(expr, Intrinsic) and expr.name in ("min", "max"):
        values = [evaluate_size(a, symbols) for a in expr.args]
        return min(values) if expr.name == "min" else max(values)
    raise ValueError(f"{type(expr).__name__} cannot appear in a size expression")


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_INTEGER_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _trunc_div,
    "rem": lambda a, b: a - _trunc_div(a, b) * b,
    "shl": lambda a, b: a << b,
    "shr": lambda a, b: a >> b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}


def replication_sizes(replication: tuple[Expr, ...], symbols: Mapping[str, int],
                      where: Location | None = None) -> tuple[int, ...]:
    """Concrete replication sizes (``(1,)`` for an unreplicated node);
    ExecutionError when one is negative or there are 2**63 instances or more."""
    if not replication:
        return (1,)
    sizes = tuple(evaluate_size(e, symbols) for e in replication)
    if any(size < 0 for size in sizes) or math.prod(sizes) >= 1 << 63:
        raise ExecutionError(Diagnostic(
            where or Location(), f"replication {list(sizes)} is invalid: sizes must be non-negative and "
                        "their product below 2**63", "check the sizes the replication is made from"))
    return sizes
