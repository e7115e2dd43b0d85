"""Type checking of kernel expressions, with the scopes they are read in.

:class:`ExprChecker` knows the names visible at a point of a kernel (its
parameters, shape symbols, lets, loop variables, arrays) and computes the
type of an expression, reporting every rule it breaks.  The statement
checker (verify_kernel) builds on it.
"""
from __future__ import annotations

from dataclasses import dataclass

from .kernel import (
    ARITHMETIC_OPS, BINARY_OPS, BITWISE_OPS, COMPARE_OPS,
    FLOAT_ONLY_INTRINSICS, INTRINSICS, LOGICAL_OPS, UNARY_OPS, Call, Expr,
    KernelFunction, Var,
)
from .types import BOOL, I64, SCALAR_TYPES, BufferType, ScalarType, Type
from .verify_common import Report, buffer_mismatch, quoted

MAX_INSTANCE_DIMS = 3

READ_ONLY_KINDS = {
    "scalar": "a scalar parameter", "shape": "a shape symbol",
    "loop": "a loop variable",
}


@dataclass(frozen=True)
class Symbol:
    """A name visible in a kernel.  ``kind``: buffer (a buffer parameter),
    scalar (a scalar parameter), shape, let, loop, or array."""

    name: str
    kind: str
    type: Type
    direction: str | None = None

    @property
    def is_buffer(self) -> bool:
        return self.kind in ("buffer", "array")


def function_scope(function: KernelFunction) -> dict[str, Symbol]:
    """The names a kernel body starts with: shape symbols (i64) and
    parameters (a scalar parameter named like a shape symbol is its value)."""
    scope = {s: Symbol(s, "shape", I64) for s in function.shape_symbols}
    for p in function.params:
        kind = "buffer" if isinstance(p.type, BufferType) else "scalar"
        scope[p.name] = Symbol(p.name, kind, p.type, p.direction)
    return scope


def _same_buffer_element(a, b) -> bool:
    """Buffer Vars may spell the shape loosely (f32[*] for f32[N]); calls
    check the shape against the callee's parameter."""
    return (isinstance(a, BufferType) and isinstance(b, BufferType)
            and a.element == b.element)


def is_scalar_type(t) -> bool:
    return isinstance(t, ScalarType) and SCALAR_TYPES.get(t.name) == t


class ExprChecker:
    """Types expressions of ``function`` inside ``module``; problems go to
    ``report``.  Every ``*_type`` method returns the type, or None when it is
    unknown because of an error already reported (no cascades)."""

    def __init__(self, module, function: KernelFunction, report: Report):
        self.module = module
        self.function = function
        self.report = report
        self.scopes: list[dict[str, Symbol]] = [function_scope(function)]

    # -- scopes --------------------------------------------------------
    def lookup(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def declare(self, symbol: Symbol) -> None:
        """Add ``symbol`` to the innermost scope; redeclaring there is an
        error (an inner block may shadow an outer name)."""
        previous = self.scopes[-1].get(symbol.name)
        if previous is not None:
            what = READ_ONLY_KINDS.get(previous.kind, f"a {previous.kind}")
            self.report.error(
                f"'{symbol.name}' is declared twice in the same scope (it is "
                f"already {what})", f"rename the new {symbol.kind} "
                f"'{symbol.name}' or assign to the existing one instead")
        self.scopes[-1][symbol.name] = symbol

    # -- expressions ---------------------------------------------------
    def expr_type(self, expr) -> Type | None:
        """The type of ``expr`` (a buffer type for a Var naming a buffer)."""
        method = getattr(self, f"_type_{type(expr).__name__}", None)
        if not isinstance(expr, Expr) or method is None:
            self.report.error(f"{expr!r} is not a kernel expression",
                              "build expressions from hpvm.ir.kernel classes")
            return None
        return method(expr)

    def scalar_type(self, expr, what: str) -> ScalarType | None:
        """The type of ``expr``, which must be a scalar; ``what`` names the
        use in messages (``operand of 'add'``)."""
        t = self.expr_type(expr)
        if isinstance(t, BufferType):
            self.report.error(
                f"buffer '{getattr(expr, 'name', expr)}' is used as a scalar "
                f"({what})", "read one element with Load(buffer, indices)")
            return None
        return t

    def expect(self, expr, expected: ScalarType, what: str) -> None:
        """Report when ``expr`` is not of type ``expected``."""
        t = self.scalar_type(expr, what)
        if t is not None and t != expected:
            self.report.error(f"{what} has type {t} but {expected} is needed",
                              f"cast it: Cast(value, {expected})")

    def expect_bool(self, expr, what: str) -> None:
        t = self.scalar_type(expr, what)
        if t is not None and not t.is_bool:
            self.report.error(
                f"{what} has type {t}; a condition must be bool",
                "compare it, e.g. x.ne(0), to get a bool")

    def _type_Const(self, expr) -> Type | None:
        if not is_scalar_type(expr.type):
            self.report.error(f"constant {expr.value!r} has invalid type "
                              f"{expr.type!r}", "use a scalar type such as i32")
            return None
        return expr.type

    def _type_Var(self, expr) -> Type | None:
        symbol = self.lookup(expr.name)
        if symbol is None:
            self.report.error(
                f"undefined variable '{expr.name}'",
                f"declare it with Let before this use (in this block or an "
                f"enclosing one), or add a parameter '{expr.name}' to "
                f"'@{self.function.name}'")
            return None
        if expr.type != symbol.type and not _same_buffer_element(expr.type, symbol.type):
            self.report.error(
                f"'{expr.name}' is {symbol.type} but is read as {expr.type}",
                f"make the Var's type {symbol.type}")
        # what the Var claims is what its parent computes with: no cascade
        return expr.type if is_scalar_type(expr.type) else symbol.type

    def _type_Unary(self, expr) -> Type | None:
        t = self.scalar_type(expr.operand, f"operand of '{expr.op}'")
        if expr.op not in UNARY_OPS:
            self.report.error(f"unknown unary operator '{expr.op}'",
                              f"use one of {quoted(UNARY_OPS)}")
            return None
        if t is None:
            return None
        if expr.op == "neg" and t.is_bool:
            self.report.error("'neg' of a bool", "use 'not' for bool")
        elif expr.op == "not" and not t.is_bool:
            self.report.error(f"'not' of a {t}; 'not' takes a bool",
                              "use 'bitnot' for integers or compare first")
        elif expr.op == "bitnot" and not t.is_int:
            self.report.error(f"'bitnot' of a {t}; it takes an integer",
                              "use 'not' for bool, or cast to an integer")
        return t

    def _type_Binary(self, expr) -> Type | None:
        what = f"operand of '{expr.op}'"
        lhs = self.scalar_type(expr.lhs, what)
        rhs = self.scalar_type(expr.rhs, what)
        if expr.op not in BINARY_OPS:
            self.report.error(f"unknown binary operator '{expr.op}'",
                              f"use one of {quoted(BINARY_OPS)}")
            return None
        if lhs is None or rhs is None:
            return lhs
        if lhs != rhs:
            self.report.error(
                f"operands of '{expr.op}' have different types {lhs} and {rhs}",
                f"add a cast: Cast(rhs, {lhs}) or Cast(lhs, {rhs})")
            return lhs
        self._check_operator_on(expr.op, lhs)
        return lhs

    def _check_operator_on(self, op: str, t: ScalarType) -> None:
        if op in ARITHMETIC_OPS and t.is_bool:
            self.report.error(f"arithmetic '{op}' on bool operands",
                              "cast the operands to an integer type first")
        elif op in BITWISE_OPS and t.is_float:
            self.report.error(f"bitwise '{op}' on {t} operands",
                              "bitwise and shift operators take integers; "
                              "cast to an integer type first")
        elif op in ("shl", "shr") and t.is_bool:
            self.report.error(f"shift '{op}' on bool operands",
                              "cast the operands to an integer type first")
        elif op in LOGICAL_OPS and not t.is_bool:
            self.report.error(f"logical '{op}' on {t} operands; it takes bool",
                              "compare the operands first (x.ne(0)), or use "
                              "bitwise 'and'/'or' for integers")

    def _type_Compare(self, expr) -> Type | None:
        what = f"operand of '{expr.op}'"
        lhs = self.scalar_type(expr.lhs, what)
        rhs = self.scalar_type(expr.rhs, what)
        if expr.op not in COMPARE_OPS:
            self.report.error(f"unknown comparison '{expr.op}'",
                              f"use one of {quoted(COMPARE_OPS)}")
        elif lhs is not None and rhs is not None and lhs != rhs:
            self.report.error(
                f"operands of '{expr.op}' have different types {lhs} and {rhs}",
                f"add a cast: Cast(rhs, {lhs}) or Cast(lhs, {rhs})")
        return BOOL

    def _type_Select(self, expr) -> Type | None:
        self.expect_bool(expr.cond, "select condition")
        a = self.scalar_type(expr.if_true, "select arm")
        b = self.scalar_type(expr.if_false, "select arm")
        if a is not None and b is not None and a != b:
            self.report.error(f"select arms have different types {a} and {b}",
                              f"cast the false arm: Cast(if_false, {a})")
        return a

    def _type_Cast(self, expr) -> Type | None:
        self.scalar_type(expr.value, "cast operand")
        if not is_scalar_type(expr.type):
            self.report.error(f"cast to invalid type {expr.type!r}",
                              "cast to a scalar type such as i32 or f32")
            return None
        return expr.type

    def _type_Bitcast(self, expr) -> Type | None:
        source = self.scalar_type(expr.value, "bitcast operand")
        if not is_scalar_type(expr.type) or expr.type.is_narrow or expr.type.is_bool:
            self.report.error(f"bitcast to invalid type {expr.type!r}",
                              "bitcast to a numeric type such as u32 or f32")
            return None
        if source is not None and source.bits != expr.type.bits:
            self.report.error(f"bitcast of a {source} ({source.bits} bits) to {expr.type} "
                              f"({expr.type.bits} bits)", "bitcast between types of one width")
        return expr.type

    def _type_Load(self, expr) -> Type | None:
        symbol = self.buffer_access(expr.buffer, expr.indices, "load")
        if symbol is None:
            return expr.type if is_scalar_type(expr.type) else None
        element = symbol.type.element.storage_type
        if expr.type != element:
            self.report.error(
                f"load of '{expr.buffer}' has type {expr.type} but its "
                f"elements are {element}", f"make the Load's type {element}")
        return expr.type if is_scalar_type(expr.type) else element

    def _type_Intrinsic(self, expr) -> Type | None:
        types = [self.scalar_type(a, f"argument of '{expr.name}'")
                 for a in expr.args]
        if expr.name not in INTRINSICS:
            self.report.error(f"unknown intrinsic '{expr.name}'",
                              f"use one of {quoted(INTRINSICS)}")
            return None
        arity = INTRINSICS[expr.name]
        if len(expr.args) != arity:
            self.report.error(
                f"intrinsic '{expr.name}' takes {arity} argument(s), got "
                f"{len(expr.args)}", f"pass exactly {arity}")
        known = [t for t in types if t is not None]
        if not known:
            return None
        first = known[0]
        if any(t != first for t in known):
            self.report.error(
                f"arguments of '{expr.name}' have different types "
                f"{', '.join(str(t) for t in known)}",
                f"cast them all to {first}")
        elif first.is_bool:
            self.report.error(f"intrinsic '{expr.name}' on bool",
                              "cast the argument to a numeric type")
        elif expr.name in FLOAT_ONLY_INTRINSICS and not first.is_float:
            self.report.error(
                f"intrinsic '{expr.name}' needs a float argument, got {first}",
                "cast it first: Cast(x, f32)")
        return first

    def _type_InstanceId(self, expr) -> Type | None:
        return self._instance_dim(expr, "InstanceId")

    def _type_InstanceCount(self, expr) -> Type | None:
        return self._instance_dim(expr, "InstanceCount")

    def _instance_dim(self, expr, kind: str) -> Type:
        if (not isinstance(expr.dim, int) or isinstance(expr.dim, bool)
                or not 0 <= expr.dim < MAX_INSTANCE_DIMS):
            self.report.error(f"{kind}({expr.dim!r}): the dimension must be "
                              f"0, 1 or 2", "use a replication dim in 0..2")
        return I64

    def _type_Call(self, expr) -> Type | None:
        result = self.call_type(expr)
        callee = self.module.functions.get(expr.function)
        if isinstance(callee, KernelFunction) and callee.return_type is None:
            self.report.error(
                f"helper '@{expr.function}' returns nothing but its call is "
                f"used as a value", "call it as a statement (ExprStmt), or "
                "give the helper a return type")
            return None
        return result

    # -- shared by expressions and statements ----------------------------
    def buffer_access(self, name: str, indices, what: str) -> Symbol | None:
        """Check ``name[indices]``; the buffer's symbol, or None if ``name``
        is no buffer."""
        symbol = self.lookup(name)
        if symbol is None:
            self.report.error(
                f"{what} of unknown buffer '{name}'",
                f"declare '{name}' as a buffer parameter of "
                f"'@{self.function.name}' or with ArrayDecl")
        elif not symbol.is_buffer:
            self.report.error(
                f"{what} of '{name}', which is "
                f"{READ_ONLY_KINDS.get(symbol.kind, 'a scalar variable')}, "
                f"not a buffer", f"read '{name}' with Var and assign with "
                "Assign; Load/Store are for buffers")
            symbol = None
        self._check_indices(name, indices, symbol)
        return symbol

    def _check_indices(self, name: str, indices, symbol: Symbol | None) -> None:
        for position, index in enumerate(indices):
            t = self.scalar_type(index, f"index {position} of '{name}'")
            if t is not None and not t.is_int:
                self.report.error(
                    f"index {position} of '{name}' has type {t}; indices "
                    f"must be integers", "cast it: Cast(index, i64)")
        if symbol is None:
            return
        rank = symbol.type.rank
        allowed = (1,) if rank is None or rank == 1 else (1, rank)
        if len(indices) not in allowed:
            counts = " or ".join(str(n) for n in allowed)
            self.report.error(
                f"'{name}' ({symbol.type}) is indexed with {len(indices)} "
                f"indices; use {counts}", "index flat with one index or "
                "with one index per dimension")

    def call_type(self, call: Call) -> Type | None:
        """Check a call's target and arguments; its return type."""
        callee = self.module.functions.get(call.function)
        if not isinstance(callee, KernelFunction):
            for arg in call.args:
                self.expr_type(arg)
            self.report.error(
                f"call of unknown function '@{call.function}'",
                f"define it in the module, or call one of "
                f"{quoted(self.module.functions)}")
            return None
        if len(call.args) != len(callee.params):
            self.report.error(
                f"'@{call.function}' takes {len(callee.params)} argument(s), "
                f"got {len(call.args)}",
                f"pass {quoted(p.name for p in callee.params)} in that order")
        for arg, param in zip(call.args, callee.params):
            self._check_argument(call.function, arg, param)
        for arg in call.args[len(callee.params):]:
            self.expr_type(arg)
        if call.type != callee.return_type:
            self.report.error(
                f"call of '@{call.function}' has type {call.type} but the "
                f"function returns {callee.return_type}",
                f"make the Call's type {callee.return_type}")
        return callee.return_type

    def _check_argument(self, function: str, arg, param) -> None:
        what = f"argument '{param.name}' of '@{function}'"
        if isinstance(param.type, BufferType):
            self._check_buffer_argument(what, arg, param)
            return
        t = self.scalar_type(arg, what)
        if t is not None and t != param.type:
            self.report.error(f"{what} is {t} but the parameter is "
                              f"{param.type}", f"cast it: Cast(x, {param.type})")

    def _check_buffer_argument(self, what: str, arg, param) -> None:
        if not isinstance(arg, Var):
            self.expr_type(arg)
            self.report.error(f"{what} must be a buffer, got a scalar "
                              "expression", "pass the buffer as Var(name, type)")
            return
        t = self.expr_type(arg)
        if t is None:
            return
        if not isinstance(t, BufferType):
            self.report.error(f"{what} must be a buffer but '{arg.name}' is "
                              f"{t}", "pass a buffer parameter or array")
            return
        reason = buffer_mismatch(t, param.type)
        if reason:
            self.report.error(f"{what}: '{arg.name}' ({t}) does not fit "
                              f"{param.type}: {reason}",
                              "pass a buffer of the parameter's type")
        symbol = self.lookup(arg.name)
        if param.writes and symbol.kind == "buffer" and symbol.direction == "in":
            self.report.error(
                f"{what} writes its buffer but '{arg.name}' is read-only "
                f"(direction in)", f"declare '{arg.name}' out or inout")
