"""Kernel-IR expressions as C expressions, with the IR's semantics.

The mixin :class:`CStyleExpressions` is half of
:class:`hpvm.codegen.cstyle.CStyleRenderer`; it relies on the renderer's
scopes (``lookup``), support functions (``require``) and hooks.  Rules
(see hpvm.ir.kernel): integers wrap (computed in the unsigned type of the
same width, where C would overflow), integer division truncates and a zero
or -1 divisor cannot trap, shift counts are taken modulo the width, floats
stay in their type, ``f16`` values live in ``float`` registers and are
rounded back to half after every operation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import TargetError
from ..ir import kernel as k
from ..ir.types import F32, U32, U64, ScalarType

C_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%",
            "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>",
            "land": "&&", "lor": "||",
            "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@dataclass(frozen=True)
class ScalarBinding:
    """An IR scalar name bound to a C variable."""

    c_name: str
    type: ScalarType


@dataclass(frozen=True)
class BufferBinding:
    """An IR buffer (parameter or array) bound to a C pointer or array.

    ``dims``: a C expression per dimension (one, the length, for a flat
    buffer); ``space``: ``global``, ``local`` or ``private``; ``flat``: the
    IR type has no shape (``f32[*]``)."""

    c_name: str
    element: ScalarType
    space: str
    dims: tuple[str, ...]
    flat: bool = False

    def __post_init__(self):
        # kernels move a narrow type's elements as its storage integers
        object.__setattr__(self, "element", self.element.storage_type)

    def flat_index(self, indices: list[str], cast: str = "") -> str:
        """Row-major flattening of C index expressions, each index and
        dimension converted by ``cast`` (a C cast such as ``(int)``, or
        nothing)."""
        def converted(text: str) -> str:
            return f"{cast}{text if text.isidentifier() else f'({text})'}" if cast else text

        indices = [converted(index) for index in indices]
        text = indices[0]
        for index, dim in zip(indices[1:], self.dims[1:]):
            text = f"({text}) * {converted(dim)} + {index}"
        return text

    def length(self) -> str:
        """The element count as a C expression."""
        return " * ".join(f"({d})" for d in self.dims) if len(self.dims) > 1 else self.dims[0]


def exact_reciprocal(divisor: k.Expr, t: ScalarType) -> float | None:
    """1/c where ``divisor`` is a constant power of two c whose reciprocal
    the arithmetic of ``t`` holds exactly (f16 computes in f32): x / c and
    x * (1/c) are then the correctly rounded values of one real number, so
    the same for every x, zeros, infinities and NaNs included (IEEE 754),
    and the product is cheaper (a device's correctly rounded division is a
    call, an FPGA's divider a block of logic).  None otherwise."""
    if not (isinstance(divisor, k.Const) and t.is_float):
        return None
    c = float(divisor.value)
    if not math.isfinite(c) or c == 0:
        return None
    mantissa, exponent = math.frexp(c)
    largest = 1023 if t.bits == 64 else 127   # c = +-2^p, 1/c = +-2^-p: both held
    if abs(mantissa) != 0.5 or abs(exponent - 1) > largest:
        return None
    return 1.0 / c


def _is_narrow_or_signed(t: ScalarType) -> bool:
    """Integer types whose C arithmetic could overflow (signed) or needs a
    cast back (narrower than int)."""
    return t.is_int and (t.is_signed or t.bits < 32)


class CStyleExpressions:
    """Expression rendering; see the module docstring."""

    # -- entry point ----------------------------------------------------
    def expr(self, e: k.Expr) -> str:
        """``e`` as a C expression (parenthesised where it matters)."""
        method = getattr(self, f"_expr_{type(e).__name__}", None)
        if method is None:
            raise TargetError(f"{self.language}: cannot render expression {type(e).__name__}")
        return method(e)

    def converted(self, e: k.Expr, target: ScalarType) -> str:
        """``e`` converted to ``target`` with the IR's cast rules."""
        return self.cast_text(self.expr(e), e.type, target)

    # -- literals -------------------------------------------------------
    def literal(self, value, t: ScalarType) -> str:
        if t.is_bool:
            return "true" if value else "false"
        if t.is_float:
            return self.float_literal(float(value), t)
        value = int(value)
        name = self.type_name(t)
        if t.bits < 32:
            return f"(({name}){value})"
        if t.is_signed and value == -(1 << (t.bits - 1)):
            suffix = "L" if t.bits == 64 else ""
            return f"({value + 1}{suffix} - 1{suffix})"
        suffix = {(32, False): "u", (64, True): "L", (64, False): "UL"}.get((t.bits, t.is_signed), "")
        return f"({value}{suffix})" if value < 0 else f"{value}{suffix}"

    def float_literal(self, value: float, t: ScalarType) -> str:
        double = t.bits == 64
        if math.isnan(value):
            return "((double)NAN)" if double else "NAN"
        if math.isinf(value):
            text = "INFINITY" if value > 0 else "(-INFINITY)"
            return f"((double){text})" if double else text
        text = repr(value) + ("" if double else "f")
        return f"({text})" if text.startswith("-") else text

    # -- leaves -----------------------------------------------------------
    def _expr_Const(self, e: k.Const) -> str:
        return self.literal(e.value, e.type)

    def _expr_Var(self, e: k.Var) -> str:
        return self.lookup(e.name).c_name

    def _expr_InstanceId(self, e: k.InstanceId) -> str:
        return self.instance_id(e.dim)

    def _expr_InstanceCount(self, e: k.InstanceCount) -> str:
        return self.instance_count(e.dim)

    def _expr_Load(self, e: k.Load) -> str:
        binding = self.buffer(e.buffer)
        return self.load_element(binding, self.index(binding, e.indices))

    def index(self, binding: BufferBinding, indices) -> str:
        return binding.flat_index([self.expr(i) for i in indices], self.index_cast)

    @property
    def index_cast(self) -> str:
        """The C cast of each index and dimension a flat index is computed
        in (``index_type``), or nothing."""
        return f"({self.index_type})" if self.index_type else ""

    # -- operators --------------------------------------------------------
    def _expr_Unary(self, e: k.Unary) -> str:
        t, operand = e.type, self.expr(e.operand)
        if e.op in ("not", "bitnot") and t.is_bool:
            return f"(!{operand})"
        if e.op == "not":
            return f"(({self.type_name(t)})({operand} == 0))"
        if e.op == "bitnot":
            return self.wrap(f"(~{operand})", t)
        if t.is_float:
            return f"(-{operand})"  # exact in every float type: no rounding needed
        if _is_narrow_or_signed(t):
            return f"(({self.type_name(t)})(0{self._unsigned_suffix(t)} - {self._as_unsigned(operand, t)}))"
        return f"(-{operand})"

    def _expr_Binary(self, e: k.Binary) -> str:
        t, op = e.type, e.op
        lhs, rhs = self.expr(e.lhs), self.expr(e.rhs)
        if op in ("land", "lor"):
            return f"({lhs} {C_OPERATORS[op]} {rhs})"
        if t.is_float:
            inverse = exact_reciprocal(e.rhs, t) if op == "div" else None
            if inverse is not None:
                return self._float_binary("mul", lhs, self.literal(inverse, F32 if t.bits < 64
                                                                   else t), t)
            return self._float_binary(op, lhs, rhs, t)
        if op in ("div", "rem"):
            return self._integer_division(op, e.rhs, lhs, rhs, t)
        if op in ("shl", "shr"):
            count = f"({rhs} & {t.bits - 1})"
            if op == "shl" and _is_narrow_or_signed(t):
                return f"(({self.type_name(t)})({self._as_unsigned(lhs, t)} << {count}))"
            return self.wrap(f"({lhs} {C_OPERATORS[op]} {count})", t)
        if op in ("add", "sub", "mul") and _is_narrow_or_signed(t):
            return (f"(({self.type_name(t)})({self._as_unsigned(lhs, t)} {C_OPERATORS[op]} "
                    f"{self._as_unsigned(rhs, t)}))")
        if t.is_bool:
            return f"((bool)({lhs} {C_OPERATORS[op]} {rhs}))"
        return self.wrap(f"({lhs} {C_OPERATORS[op]} {rhs})", t)

    def _float_binary(self, op: str, lhs: str, rhs: str, t: ScalarType) -> str:
        compute = F32 if t.bits == 16 else t
        if op == "rem":
            text = f"{self.math_function('fmod', compute)}({lhs}, {rhs})"
        else:
            text = f"({lhs} {C_OPERATORS[op]} {rhs})"
        return self.rounded(text, t)

    def _integer_division(self, op: str, divisor: k.Expr, lhs: str, rhs: str, t: ScalarType) -> str:
        safe_constant = isinstance(divisor, k.Const) and divisor.value not in (0, -1)
        if safe_constant:
            return self.wrap(f"({lhs} {C_OPERATORS[op]} {rhs})", t)
        return f"{self._division_helper(op, t)}({lhs}, {rhs})"

    def _division_helper(self, op: str, t: ScalarType) -> str:
        """A support function for ``op`` on ``t`` that cannot trap: a zero
        divisor acts as 1 (the IR leaves it undefined) and MIN / -1 wraps."""
        name = f"hpvm_{op}_{t.name}"
        c_type = self.type_name(t)
        if t.is_signed:
            result = (f"b == -1 ? ({c_type})(0{self._unsigned_suffix(t)} - "
                      f"{self._as_unsigned('a', t)}) : ({c_type})(a / safe)"
                      if op == "div" else f"b == -1 ? ({c_type})0 : ({c_type})(a % safe)")
            safe = "(b == 0 || b == -1) ? 1 : b"
        else:
            result = f"({c_type})(a {C_OPERATORS[op]} safe)"
            safe = "b == 0 ? 1 : b"
        self.require(name, [
            f"{self.helper_qualifier} {c_type} {name}({c_type} a, {c_type} b) {{",
            f"    {c_type} safe = {safe};",
            f"    return {result};",
            "}"])
        return name

    def _expr_Compare(self, e: k.Compare) -> str:
        return f"({self.expr(e.lhs)} {C_OPERATORS[e.op]} {self.expr(e.rhs)})"

    def _expr_Select(self, e: k.Select) -> str:
        return f"({self.expr(e.cond)} ? {self.expr(e.if_true)} : {self.expr(e.if_false)})"

    # -- conversions ------------------------------------------------------
    def _expr_Cast(self, e: k.Cast) -> str:
        return self.converted(e.value, e.type)

    def _expr_Bitcast(self, e: k.Bitcast) -> str:
        return self.bitcast_text(self.expr(e.value), e.value.type, e.type)

    def bitcast_text(self, text: str, source: ScalarType, target: ScalarType) -> str:
        """C text of the bits of ``text`` read as ``target`` (C99: through a
        union)."""
        return (f"(((union {{ {self.type_name(source)} a; {self.type_name(target)} b; }})"
                f"{{ .a = {text} }}).b)")

    def cast_text(self, text: str, source: ScalarType, target: ScalarType) -> str:
        """C text of ``text`` (of IR type ``source``) converted to ``target``."""
        if source == target:
            return text
        if target.is_bool:
            return f"({text} != 0)"
        if target.is_float and target.bits == 16:
            if source.is_float and source.bits == 16:
                return text
            return self.round_f16(f"(float){text}")
        register = self.type_name(target)
        return f"(({register}){text})"

    def wrap(self, text: str, t: ScalarType) -> str:
        """``text`` converted back to ``t`` where C promoted it to int."""
        if t.is_int and t.bits < 32:
            return f"(({self.type_name(t)}){text})"
        return text

    def rounded(self, text: str, t: ScalarType) -> str:
        """A float result rounded to ``t`` (only f16 changes)."""
        return self.round_f16(text) if t.bits == 16 else text

    def _as_unsigned(self, text: str, t: ScalarType) -> str:
        return f"({self.type_name(U64 if t.bits == 64 else U32)}){text}"

    @staticmethod
    def _unsigned_suffix(t: ScalarType) -> str:
        return "UL" if t.bits == 64 else "u"

    # -- intrinsics ---------------------------------------------------------
    def _expr_Intrinsic(self, e: k.Intrinsic) -> str:
        t = e.type
        args = [self.expr(a) for a in e.args]
        if t.is_float:
            compute = F32 if t.bits == 16 else t
            name = {"abs": "fabs", "min": "fmin", "max": "fmax"}.get(e.name, e.name)
            return self.rounded(f"{self.math_function(name, compute)}({', '.join(args)})", t)
        if e.name == "abs":
            return self.integer_abs(args[0], t) if t.is_signed else args[0]
        if e.name in ("min", "max"):
            return self.integer_min_max(e.name, args[0], args[1], t)
        raise TargetError(f"{self.language}: intrinsic '{e.name}' needs a float argument, got {t}")

    def _expr_Call(self, e: k.Call) -> str:
        return self.call_text(e)

