"""Math intrinsics and atomic updates.

Float math maps to LLVM intrinsics (``llvm.sqrt.f32`` ...), which LLVM turns
into instructions or libm calls; ``tanh`` has no LLVM intrinsic and calls
libm's ``tanh`` on f64; ``exp``, ``log``, ``tanh``, ``sin``, ``cos`` and
``pow`` on f32 (and f16) are written out as instructions (vector_math.py,
vector_trig.py, vector_pow.py), so that loops using them vectorise.
``min``/``max`` on floats are C's fmin/fmax (a NaN operand yields the
other operand, as the reference interpreter does), written as compares
and selects rather than ``llvm.minnum`` /
``llvm.maxnum``: LLVM 22's loop vectoriser turns a minnum/maxnum reduction
in an inner loop whose trip count is not a multiple of the vector width
into code that skips the last iterations (max pooling, ``acc = max(acc,
x[k])``); it does not recognise the select form as a reduction, and x86
still selects ``maxps``/``minps`` for it.  Where one operand is known
never to be NaN (an accumulator started from a number: hpvm.ir.nan_free)
the NaN test is left out and the select is one ``minps``/``maxps``.
"""
from __future__ import annotations

from llvmlite import ir

from hpvm.errors import TargetError
from hpvm.ir.types import ScalarType

from .arithmetic import narrow, widen
from .llvm_types import FLOAT
from .vector_math import call_intrinsic, exp_f32, log_f32, tanh_f32
from .vector_pow import pow_f32
from .vector_trig import cos_f32, sin_f32

_LLVM_FLOAT_INTRINSICS = {
    "sqrt": "llvm.sqrt", "exp": "llvm.exp", "log": "llvm.log", "sin": "llvm.sin",
    "cos": "llvm.cos", "floor": "llvm.floor", "ceil": "llvm.ceil", "abs": "llvm.fabs",
    "pow": "llvm.pow",
}
_LIBM_F64_FUNCTIONS = {"tanh": "tanh"}
"""f64 functions without an LLVM intrinsic (f32 ones are written out)."""
_WRITTEN_OUT_F32 = {"exp": exp_f32, "log": log_f32, "tanh": tanh_f32, "sin": sin_f32,
                    "cos": cos_f32, "pow": pow_f32}


def math_intrinsic(builder: ir.IRBuilder, name: str, args: list, type: ScalarType,
                   numbers: tuple[bool, ...] = ()):
    """The value of intrinsic ``name`` on ``args`` (register values of
    ``type``); ``numbers`` says of each argument whether it is known never
    to be NaN (hpvm.ir.nan_free; float min/max then take one instruction)."""
    if type.is_float:
        return _float_intrinsic(builder, name, args, type, numbers)
    if type.is_int:
        return _integer_intrinsic(builder, name, args, type)
    raise TargetError(f"cpu codegen: intrinsic '{name}' is not defined on {type}")


def _float_intrinsic(builder: ir.IRBuilder, name: str, args: list, type: ScalarType,
                     numbers: tuple[bool, ...]):
    wide = [widen(builder, a, type)[0] for a in args]
    value_type = wide[0].type
    if name in ("min", "max"):
        return narrow(builder, _float_min_max(builder, name, *wide, *(numbers or (False,) * 2)),
                      type)
    if name in _WRITTEN_OUT_F32 and value_type == FLOAT:
        return narrow(builder, _WRITTEN_OUT_F32[name](builder, *wide), type)
    if name in _LLVM_FLOAT_INTRINSICS:
        value = call_intrinsic(builder, _LLVM_FLOAT_INTRINSICS[name], value_type, *wide)
    elif name in _LIBM_F64_FUNCTIONS:
        function = _declare_libm(builder.module, _LIBM_F64_FUNCTIONS[name], value_type, len(args))
        value = builder.call(function, wide)
    else:
        raise TargetError(f"cpu codegen: unknown intrinsic '{name}'")
    return narrow(builder, value, type)


def _float_min_max(builder: ir.IRBuilder, name: str, a, b, a_is_number: bool,
                   b_is_number: bool):
    """fmin/fmax(a, b): ``a`` when ``b`` is NaN, else the smaller/larger
    (``b`` when ``a`` is NaN: the ordered compare is false).  Where one
    operand is known not to be NaN, the other is compared first and the
    known one is the fallback: ``a < b ? a : b``, x86's one ``minps``."""
    symbol = "<" if name == "min" else ">"
    if b_is_number or a_is_number:
        first, fallback = (a, b) if b_is_number else (b, a)
        return builder.select(builder.fcmp_ordered(symbol, first, fallback), first, fallback)
    keep_a = builder.fcmp_ordered(symbol, a, b)
    b_is_nan = builder.fcmp_unordered("uno", b, b)
    return builder.select(builder.or_(keep_a, b_is_nan), a, b)


def _declare_libm(module: ir.Module, symbol: str, value_type, arity: int) -> ir.Function:
    existing = module.globals.get(symbol)
    if existing is not None:
        return existing
    function = ir.Function(module, ir.FunctionType(value_type, [value_type] * arity), symbol)
    function.attributes.add("nounwind")
    return function


def _integer_intrinsic(builder: ir.IRBuilder, name: str, args: list, type: ScalarType):
    if name == "abs":
        if not type.is_signed:
            return args[0]
        zero = ir.Constant(args[0].type, 0)
        negative = builder.icmp_signed("<", args[0], zero)
        return builder.select(negative, builder.sub(zero, args[0]), args[0])
    if name in ("min", "max"):
        symbol = "<" if name == "min" else ">"
        compare = builder.icmp_signed if type.is_signed else builder.icmp_unsigned
        return builder.select(compare(symbol, args[0], args[1]), args[0], args[1])
    raise TargetError(f"cpu codegen: intrinsic '{name}' needs a float argument, got {type}")


def atomic_update(builder: ir.IRBuilder, op: str, pointer, value, type: ScalarType):
    """Atomically combine ``value`` into ``*pointer``; returns the old value.
    Float min/max use ``atomicrmw fmin/fmax`` (fmin/fmax semantics, as the
    non-atomic intrinsics)."""
    if type.is_bool:
        raise TargetError("cpu codegen: atomic updates of bool buffers are not supported")
    if type.is_float:
        kind = {"add": "fadd", "min": "fmin", "max": "fmax"}[op]
    elif op == "add":
        kind = "add"
    else:
        kind = op if type.is_signed else "u" + op
    return builder.atomic_rmw(kind, pointer, value, "monotonic")
