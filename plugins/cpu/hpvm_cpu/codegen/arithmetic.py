"""Scalar operations on LLVM values with the IR's semantics (kernel.py):
wrapping integers, C division, masked shifts, ordered float compares, C
casts.  ``f16`` operands are widened to ``float`` for every operation and the
result rounded back (the rounding rule the lead chose)."""
from __future__ import annotations

from llvmlite import ir

from hpvm.errors import TargetError
from hpvm.ir.types import F32, ScalarType

from .llvm_types import FLOAT, HALF, register_type

_FLOAT_BINARY = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv", "rem": "frem"}
_CONTRACTIBLE = ("add", "sub", "mul")
"""Float operations LLVM may fuse into one multiply-add (kernel.py allows it)."""
_INT_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor"}
_COMPARE_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def widen(builder: ir.IRBuilder, value, type: ScalarType):
    """``value`` and its type as computed: f16 becomes float, others stay."""
    if type.is_float and type.bits == 16:
        return builder.fpext(value, FLOAT), F32
    return value, type


def narrow(builder: ir.IRBuilder, value, type: ScalarType):
    """Round a widened result back to ``type`` (only f16 changes)."""
    if type.is_float and type.bits == 16:
        return builder.fptrunc(value, HALF)
    return value


def unary(builder: ir.IRBuilder, op: str, value, type: ScalarType):
    """``neg``, ``not`` (logical: ``== 0`` on integers) or ``bitnot``."""
    if op == "neg":
        if type.is_float:
            wide, _ = widen(builder, value, type)
            return narrow(builder, builder.fneg(wide), type)
        return builder.sub(ir.Constant(value.type, 0), value)
    if op == "not" and not type.is_bool:  # logical not of an integer: == 0
        return builder.zext(builder.icmp_unsigned("==", value, ir.Constant(value.type, 0)), value.type)
    if op in ("not", "bitnot"):
        return builder.not_(value)
    raise TargetError(f"cpu codegen: unknown unary operator '{op}'")


def binary(builder: ir.IRBuilder, op: str, lhs, rhs, type: ScalarType):
    """Arithmetic or bitwise ``lhs op rhs`` on values of ``type``
    (``land``/``lor`` are control flow, see the expression lowering)."""
    if type.is_float:
        if op not in _FLOAT_BINARY:
            raise TargetError(f"cpu codegen: operator '{op}' is not defined on {type}")
        wide_lhs, _ = widen(builder, lhs, type)
        wide_rhs, _ = widen(builder, rhs, type)
        flags = ("contract",) if op in _CONTRACTIBLE else ()
        result = getattr(builder, _FLOAT_BINARY[op])(wide_lhs, wide_rhs, flags=flags)
        return narrow(builder, result, type)
    if op in _INT_BINARY:
        return getattr(builder, _INT_BINARY[op])(lhs, rhs)
    if op in ("div", "rem"):
        return _divide(builder, op, lhs, rhs, type)
    if op in ("shl", "shr"):
        return _shift(builder, op, lhs, rhs, type)
    raise TargetError(f"cpu codegen: unknown binary operator '{op}'")


def _divide(builder: ir.IRBuilder, op: str, lhs, rhs, type: ScalarType):
    """C division/remainder.  A zero divisor is undefined in the IR; it is
    replaced by 1 here so a buggy kernel cannot kill the process with
    SIGFPE.  Signed MIN / -1 wraps (MIN, remainder 0) instead of trapping."""
    zero = ir.Constant(rhs.type, 0)
    one = ir.Constant(rhs.type, 1)
    if not type.is_signed:
        safe = builder.select(builder.icmp_unsigned("==", rhs, zero), one, rhs)
        return builder.udiv(lhs, safe) if op == "div" else builder.urem(lhs, safe)
    minus_one = ir.Constant(rhs.type, -1)
    is_minus_one = builder.icmp_signed("==", rhs, minus_one)
    is_zero = builder.icmp_signed("==", rhs, zero)
    safe = builder.select(builder.or_(is_minus_one, is_zero), one, rhs)
    if op == "div":
        return builder.select(is_minus_one, builder.sub(zero, lhs), builder.sdiv(lhs, safe))
    return builder.select(is_minus_one, zero, builder.srem(lhs, safe))


def _shift(builder: ir.IRBuilder, op: str, lhs, rhs, type: ScalarType):
    """Shifts take the count modulo the width; ``shr`` is arithmetic for
    signed types, logical for unsigned."""
    count = builder.and_(rhs, ir.Constant(rhs.type, type.bits - 1))
    if op == "shl":
        return builder.shl(lhs, count)
    return builder.ashr(lhs, count) if type.is_signed else builder.lshr(lhs, count)


def compare(builder: ir.IRBuilder, op: str, lhs, rhs, type: ScalarType):
    """``lhs op rhs`` as an ``i1``; floats compare ordered (false on NaN)
    except ``ne``, which is true on NaN."""
    symbol = _COMPARE_SYMBOLS[op]
    if type.is_float:
        wide_lhs, _ = widen(builder, lhs, type)
        wide_rhs, _ = widen(builder, rhs, type)
        if op == "ne":
            return builder.fcmp_unordered(symbol, wide_lhs, wide_rhs)
        return builder.fcmp_ordered(symbol, wide_lhs, wide_rhs)
    if type.is_signed:
        return builder.icmp_signed(symbol, lhs, rhs)
    return builder.icmp_unsigned(symbol, lhs, rhs)


def convert(builder: ir.IRBuilder, value, source: ScalarType, target: ScalarType):
    """C conversion of ``value`` from ``source`` to ``target``: to bool is
    ``!= 0``; floats to integers truncate toward zero; integers wrap."""
    if source == target:
        return value
    if target.is_bool:
        zero = ir.Constant(value.type, 0)
        if source.is_float:
            wide, _ = widen(builder, value, source)
            return builder.fcmp_unordered("!=", wide, ir.Constant(wide.type, 0))
        return builder.icmp_unsigned("!=", value, zero)
    destination = register_type(target)
    if source.is_float:
        return _convert_float(builder, value, source, target, destination)
    if target.is_float:
        # Through float for f16: exact wherever the f16 result is finite.
        via = FLOAT if target.bits == 16 else destination
        result = builder.sitofp(value, via) if source.is_signed else builder.uitofp(value, via)
        return narrow(builder, result, target)
    if target.bits < source.bits:
        return builder.trunc(value, destination)
    if target.bits > source.bits:
        return builder.sext(value, destination) if source.is_signed else builder.zext(value, destination)
    return value


def _convert_float(builder: ir.IRBuilder, value, source, target, destination):
    if target.is_float:
        if target.bits > source.bits:
            return builder.fpext(value, destination)
        return builder.fptrunc(value, destination)
    wide, _ = widen(builder, value, source)
    return builder.fptosi(wide, destination) if target.is_signed else builder.fptoui(wide, destination)
