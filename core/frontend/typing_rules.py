"""Typing rules of the kernel language.

- Literals are *weak*: ``x * 2`` and ``x + 0.5`` give the literal the type of
  the other operand (an int literal may become a float; a float literal with
  an integer operand is an error: write ``f32(i) * 0.5``).  Alone, an int
  literal is i64, a float literal f64, True/False bool.  Operations on two
  literals are folded at compile time (integer ``//`` and ``%`` truncating
  as in C).
- A local variable first assigned a literal (``acc = 0.0``) takes the type of
  the first non-literal value later assigned to it (``acc += a[i] * b[i]``
  makes it f32); annotate (``acc: f32 = 0``) to choose yourself.
- Two typed operands: equal types are fine; integers of the same signedness
  and floats widen to the wider type (i32 + i64 is i64, f32 + f64 is f64);
  mixing integers and floats, or signed and unsigned, is an error whose fix
  is a cast (``f32(i)``).
- Assignments, stores, arguments and returns widen the same way; narrowing
  needs a cast.
- ``/`` is float division (ints: an error, use ``//``); ``//`` and ``%`` on
  integers truncate toward zero as in C (``-7 // 2 == -3``, not Python's -4);
  ``//`` on floats is ``floor(a / b)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.kernel import Binary, Cast, Const, Expr, Select, Unary, normalize_constant
from ..ir.types import BOOL, F64, I64, ScalarType


@dataclass(frozen=True)
class Value:
    """A translated expression; ``weak`` marks literal-derived values whose
    type adapts to the other operand."""

    expr: Expr
    weak: bool = False

    @property
    def type(self) -> ScalarType | None:
        return None if self.expr is None else self.expr.type


class TypeRuleError(Exception):
    """A typing rule failed; the translator turns it into a located error
    (``fix`` says what to write instead)."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.message, self.fix = message, fix


def literal(value) -> Value:
    """A Python bool / int / float constant as a Value (bools are strong)."""
    if isinstance(value, bool):
        return Value(Const(value, BOOL))
    if isinstance(value, int):
        return Value(Const(value, I64), weak=True)
    return Value(Const(float(value), F64), weak=True)


def wider(a: ScalarType, b: ScalarType) -> ScalarType | None:
    """The type both ``a`` and ``b`` widen to implicitly, or None."""
    if a == b:
        return a
    if a.kind == b.kind and a.kind in ("int", "uint", "float"):
        return a if a.bits >= b.bits else b
    return None


def convert(value: Value, target: ScalarType, what: str) -> Expr:
    """``value`` as an expression of ``target`` (``what`` names the place,
    e.g. "store to 'C'"); raises TypeRuleError when a cast is needed."""
    if value.type == target:
        return value.expr
    if value.weak:
        return adopt(value, target)
    if wider(value.type, target) == target:
        return Cast(value.expr, target)
    raise TypeRuleError(
        f"{what} needs {target} but the value is {value.type}",
        f"convert explicitly: {target}(...)")


def adopt(value: Value, target: ScalarType) -> Expr:
    """A weak value retyped to ``target``."""
    if value.type.is_float and not target.is_float:
        raise TypeRuleError(
            f"a float literal cannot become {target}",
            "write an integer literal, or cast the other operand: f32(x)")
    if target.is_bool:
        raise TypeRuleError("a number cannot be used as bool", "compare it: x != 0")
    return _retype(value.expr, target)


def _retype(expr: Expr, target: ScalarType) -> Expr:
    """A literal-derived expression rebuilt in ``target`` (constants
    re-made, selects and arithmetic rebuilt; anything else cast)."""
    if isinstance(expr, Const):
        return Const(normalize_constant(expr.value, target), target)
    if isinstance(expr, Select):
        return Select(expr.cond, _retype(expr.if_true, target), _retype(expr.if_false, target))
    if isinstance(expr, Binary) and expr.op in ("add", "sub", "mul", "div", "rem"):
        return Binary(expr.op, _retype(expr.lhs, target), _retype(expr.rhs, target))
    if isinstance(expr, Unary) and expr.op == "neg":
        return Unary("neg", _retype(expr.operand, target))
    return Cast(expr, target)


def unify(a: Value, b: Value, what: str) -> tuple[Expr, Expr, bool]:
    """Both operands in one type: ``(a_expr, b_expr, weak_result)``."""
    if a.weak and b.weak:
        common = wider(a.type, b.type) or F64
        return adopt(a, common), adopt(b, common), True
    if a.weak:
        return adopt(a, b.type), b.expr, False
    if b.weak:
        return a.expr, adopt(b, a.type), False
    common = wider(a.type, b.type)
    if common is None:
        fix = (f"cast one side, e.g. {b.type}(x)" if a.type.kind != "bool"
               and b.type.kind != "bool" else "compare to get a bool: x != 0")
        raise TypeRuleError(f"{what} mixes {a.type} and {b.type}", fix)
    return convert(a, common, what), convert(b, common, what), False


def fold(op: str, lhs: Const, rhs: Const) -> Const | None:
    """The constant ``lhs op rhs`` for two literals, or None when it cannot
    be folded (division by zero)."""
    x, y = lhs.value, rhs.value
    integer = lhs.type.is_int
    try:
        value = {
            "add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
            "div": lambda: _c_div(x, y) if integer else x / y,
            "rem": lambda: x - _c_div(x, y) * y if integer else None,
        }[op]()
    except (KeyError, ZeroDivisionError):
        return None
    return None if value is None else Const(value, lhs.type)


def _c_div(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y >= 0) else -quotient


def binary(op: str, lhs: Expr, rhs: Expr, weak: bool) -> Value:
    """``Binary(op, lhs, rhs)``, folded when both sides are literals."""
    if weak and isinstance(lhs, Const) and isinstance(rhs, Const):
        folded = fold(op, lhs, rhs)
        if folded is not None:
            return Value(folded, weak=True)
    return Value(Binary(op, lhs, rhs), weak=weak)
