"""Translation of Python expressions in kernel bodies to kernel IR.

``ExprTranslator.value(node)`` returns a typed :class:`Value`; the typing
rules are in typing_rules.py.  Calls are handled by calls.py (mixed in by
the statement translator).
"""
from __future__ import annotations

import ast
import numbers

import numpy as np

from ..ir.kernel import (
    Assign, Binary, Cast, Compare, Const, Expr, If, Intrinsic, Let, Load, Select, Unary, Var,
)
from ..ir.types import BOOL, I64, scalar_type_of_dtype
from ..ir.visit import walk
from .scope import KernelScope
from .source import MISSING
from .typing_rules import TypeRuleError, Value, binary, literal, unify

ARITHMETIC = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
              ast.FloorDiv: "div", ast.Mod: "rem", ast.BitAnd: "and", ast.BitOr: "or",
              ast.BitXor: "xor", ast.LShift: "shl", ast.RShift: "shr"}
COMPARISONS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le",
               ast.Gt: "gt", ast.GtE: "ge"}
UNSUPPORTED = {
    ast.List: "lists are not supported in kernels; use private_array(f32, (n,))",
    ast.Tuple: "tuples are values only in ins/outs and indices; use separate variables",
    ast.Dict: "dicts are not supported in kernels",
    ast.Set: "sets are not supported in kernels",
    ast.ListComp: "comprehensions are not supported; write a for loop over range(...)",
    ast.GeneratorExp: "generators are only values of reduce(...); write reduce('+', (x[i] for i in range(n)))",
    ast.Lambda: "lambdas are not supported; define an @hpvm.kernel helper",
    ast.JoinedStr: "strings are not supported in kernels",
    ast.Await: "async code is not supported in kernels",
    ast.Yield: "generators are not supported in kernels",
    ast.NamedExpr: "':=' is not supported; assign in a separate statement",
    ast.Starred: "'*' unpacking is not supported in kernels",
    ast.Slice: "slices are not supported; index single elements inside a loop",
}


class ExprTranslator:
    """Translates expressions in ``scope``; statements an expression needs
    first (atomics, inlined helper bodies) go to ``self.emit``."""

    def __init__(self, scope: KernelScope):
        self.scope = scope
        self.out: list = []

    # -- helpers -----------------------------------------------------------
    def error(self, node, message: str, fix: str = ""):
        return self.scope.source.error(node, message, fix)

    def emit(self, stmt) -> None:
        self.out.append(stmt)

    def rule(self, node, fn, *args):
        """Apply a typing rule; its failure becomes a located error."""
        try:
            return fn(*args)
        except TypeRuleError as exc:
            raise self.error(node, exc.message, exc.fix) from None

    def settle(self, value: Value, target) -> None:
        """Record the type weak locals inside ``value`` now take."""
        if not value.weak:
            return
        for item in walk(value.expr):
            if isinstance(item, Var) and self._is_weak_local(item.name):
                self.scope.settled_now.setdefault(item.name, target)

    def _is_weak_local(self, ir_name: str) -> bool:
        return any(v.weak and v.ir_name == ir_name for v in self.scope.locals.values())

    def scalar(self, node, what: str = "this value") -> Value:
        value = self.value(node)
        if value.type is None:
            raise self.error(node, f"{what} has no value", "use a helper that returns a value")
        return value

    def condition(self, node) -> Expr:
        value = self.scalar(node)
        if not value.type.is_bool:
            raise self.error(node, f"a condition must be bool, not {value.type}",
                             f"compare explicitly: ({ast.unparse(node)}) != 0")
        return value.expr

    def index(self, node) -> Expr:
        """An element index: an integer (as i64), never a negative literal."""
        value = self.integer(node)
        if isinstance(value, Const) and value.value < 0:
            raise self.error(node, "negative indices do not count from the end in kernels",
                             "write the position explicitly: buf[n - 1]")
        return value

    def integer(self, node) -> Expr:
        """An integer expression converted to i64."""
        value = self.scalar(node)
        if value.weak and isinstance(value.expr, Const) and not value.type.is_float:
            return Const(value.expr.value, I64)
        if not value.type.is_int:
            raise self.error(node, f"an index or bound must be an integer, not {value.type}",
                             f"convert it: i64({ast.unparse(node)})")
        self.settle(value, I64)
        return value.expr if value.type == I64 else Cast(value.expr, I64)

    # -- dispatch ----------------------------------------------------------
    def value(self, node) -> Value:
        method = getattr(self, f"_expr_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        reason = UNSUPPORTED.get(type(node), f"'{type(node).__name__}' expressions are not supported in kernels")
        message, _, fix = reason.partition("; ")
        raise self.error(node, message, fix)

    def _expr_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return literal(node.value)
        raise self.error(node, f"constant {node.value!r} is not a number",
                         "kernels compute with numbers and bools only")

    def _expr_Name(self, node):
        return self.name_value(node.id, node)

    def name_value(self, name: str, node) -> Value:
        scope = self.scope
        if name in scope.locals:
            local = scope.locals[name]
            return Value(Var(local.ir_name, local.type), weak=local.weak)
        if name in scope.loop_vars:
            return Value(Var(scope.loop_vars[name], I64))
        if name in scope.buffers or name in scope.arrays:
            raise self.error(node, f"buffer '{name}' is used as a number",
                             f"index it: {name}[i]")
        if name in scope.undeclared:
            raise self.undeclared(node, name, "read")
        if name in scope.scalars:
            return Value(scope.scalar(name))
        if name in scope.constants:
            return scope.constants[name]
        symbol = scope.symbol(name)
        if symbol is not None:
            return Value(symbol)
        return self.python_constant(name, scope.source.lookup(name), node)

    def python_constant(self, name: str, value, node) -> Value:
        """A value from the Python scope used as a compile-time constant."""
        if value is MISSING:
            raise self.error(node, f"name '{name}' is not defined",
                             "define it before use, or pass it as a parameter")
        if isinstance(value, np.generic) and value.dtype.kind in "biuf":
            return Value(Const(value.item(), scalar_type_of_dtype(value.dtype)))
        if isinstance(value, (bool, int, float, numbers.Integral, numbers.Real)):
            return literal(value if isinstance(value, (bool, int, float)) else float(value))
        raise self.error(node, f"'{name}' is a Python {type(value).__name__}, not a number",
                         "kernels may capture only numbers from Python; pass arrays as "
                         "buffers in ins/outs")

    def _expr_Attribute(self, node):
        base = node.value
        if isinstance(base, ast.Name) and (base.id in self.scope.buffers or base.id in self.scope.arrays):
            raise self.error(node, f"'{ast.unparse(node)}' is not supported",
                             f"use {base.id}.shape[d] for a dimension")
        return self.python_constant(ast.unparse(node), self.python_object(node), node)

    def python_object(self, node):
        """The Python object a dotted name (``math.pi``) denotes, or MISSING."""
        if isinstance(node, ast.Name):
            if node.id in self.scope.locals or node.id in self.scope.loop_vars:
                return MISSING
            return self.scope.source.lookup(node.id)
        if isinstance(node, ast.Attribute):
            base = self.python_object(node.value)
            return MISSING if base is MISSING else getattr(base, node.attr, MISSING)
        return MISSING

    # -- operators ---------------------------------------------------------
    def _expr_BinOp(self, node):
        lhs, rhs = self.scalar(node.left), self.scalar(node.right)
        op_type = type(node.op)
        if op_type is ast.Pow:
            return self.power(node, lhs, rhs)
        if op_type not in ARITHMETIC:
            raise self.error(node, f"operator '{ast.unparse(node)}' is not supported in kernels",
                             "use + - * / // % & | ^ << >> or **")
        a, b, weak = self.rule(node, unify, lhs, rhs, f"'{ast.unparse(node)}'")
        self.settle(lhs, a.type)
        self.settle(rhs, b.type)
        kind = a.type
        op = ARITHMETIC[op_type]
        if kind.is_bool:
            raise self.error(node, "arithmetic on bool values is not supported",
                             "convert first: i32(flag)")
        if op_type is ast.Div and not kind.is_float:
            raise self.error(node, f"'/' on integers ({kind}) is not defined in kernels",
                             "use '//' for integer division (truncates toward zero) or cast to a float")
        if op_type is ast.FloorDiv and kind.is_float:
            return Value(Intrinsic("floor", (binary("div", a, b, weak).expr,)), weak)
        if op_type is ast.Mod and kind.is_float:
            raise self.error(node, "'%' on floats is not supported",
                             "write a - b * floor(a / b)")
        if op in ("and", "or", "xor", "shl", "shr") and not kind.is_int:
            raise self.error(node, f"bitwise '{ast.unparse(node)}' needs integers, not {kind}",
                             "use 'and' / 'or' for bools")
        return binary(op, a, b, weak)

    def power(self, node, base: Value, exponent: Value) -> Value:
        """``base ** exponent``: repeated products for integers (constant
        exponents 1 to 8) and for a float squared (``x * x`` is the
        correctly rounded square, as pow's best result), else ``pow``."""
        constant = (isinstance(exponent.expr, Const) and exponent.weak
                    and not exponent.type.is_float)
        if base.type.is_float and constant and exponent.expr.value == 2:
            return binary("mul", base.expr, base.expr, base.weak)
        if not base.type.is_float and constant and 0 < exponent.expr.value <= 8:
            result = base
            for _ in range(exponent.expr.value - 1):
                result = binary("mul", result.expr, base.expr, base.weak)
            return result
        a, b, weak = self.rule(node, unify, base, exponent, f"'{ast.unparse(node)}'")
        if not a.type.is_float:
            raise self.error(node, "'**' on integers needs a constant exponent from 1 to 8",
                             "cast to a float: f32(x) ** y")
        return Value(Intrinsic("pow", (a, b)), weak)

    def _expr_UnaryOp(self, node):
        operand = self.scalar(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            if not operand.type.is_bool:
                raise self.error(node, f"'not' needs a bool, not {operand.type}",
                                 f"compare: {ast.unparse(node.operand)} == 0")
            return Value(Unary("not", operand.expr))
        if isinstance(node.op, ast.Invert) and not operand.type.is_int:
            raise self.error(node, f"'~' needs an integer, not {operand.type}", "use 'not' for bools")
        if isinstance(node.op, ast.USub) and isinstance(operand.expr, Const) and operand.weak:
            return Value(Const(-operand.expr.value, operand.type), weak=True)
        if operand.type.is_bool:
            raise self.error(node, "arithmetic on bool values is not supported", "convert first: i32(flag)")
        return Value(Unary("neg" if isinstance(node.op, ast.USub) else "bitnot", operand.expr),
                     operand.weak)

    def _expr_BoolOp(self, node):
        op = "land" if isinstance(node.op, ast.And) else "lor"
        result = self.condition(node.values[0])
        for item in node.values[1:]:
            rhs = self.without_statements(item, "the right side of 'and' / 'or'", self.condition)
            result = binary(op, result, rhs, False).expr
        return Value(result)

    def without_statements(self, node, where: str, fn):
        """``fn(node)`` where no statements may be emitted (short-circuited
        or repeatedly evaluated code)."""
        before = len(self.out)
        result = fn(node)
        if len(self.out) != before:
            raise self.error(node, f"helper calls, atomics and conditional loads are not allowed in {where}",
                             "compute the value into a variable first")
        return result

    def _expr_Compare(self, node):
        parts = []
        lhs = self.scalar(node.left)
        for op, right in zip(node.ops, node.comparators):
            if type(op) not in COMPARISONS:
                raise self.error(node, f"comparison '{ast.unparse(node)}' is not supported",
                                 "use == != < <= > >=")
            rhs = self.scalar(right)
            a, b, _ = self.rule(node, unify, lhs, rhs, f"'{ast.unparse(node)}'")
            self.settle(lhs, a.type)
            self.settle(rhs, b.type)
            parts.append(_compare(COMPARISONS[type(op)], a, b))
            lhs = rhs
        result = parts[0]
        for part in parts[1:]:
            result = binary("land", result, part, False).expr
        return Value(result)

    def _expr_IfExp(self, node):
        """``a if c else b``: a Select when both arms are safe to evaluate,
        else (loads, integer division, helper calls) an if statement into a
        temporary, so only the chosen arm runs, as in Python."""
        cond = self.condition(node.test)
        arms, blocks = [], []
        for arm in (node.body, node.orelse):
            saved, self.out = self.out, []
            arms.append(self.scalar(arm))
            blocks.append(tuple(self.out))
            self.out = saved
        a, b, weak = self.rule(node, unify, arms[0], arms[1], f"'{ast.unparse(node)}'")
        self.settle(arms[0], a.type)
        self.settle(arms[1], b.type)
        if not any(blocks) and not _may_fault(a) and not _may_fault(b):
            return Value(Select(cond, a, b), weak)
        temp = self.scope.names.fresh(self.scope.local_prefix + "choice")
        self.emit(Let(temp, a.type, None))
        self.emit(If(cond, blocks[0] + (Assign(temp, a),), blocks[1] + (Assign(temp, b),)))
        return Value(Var(temp, a.type))

    # -- indexing ----------------------------------------------------------
    def _expr_Subscript(self, node):
        shape_dim = self.shape_subscript(node)
        if shape_dim is not None:
            return shape_dim
        name, indices, element = self.element(node, "read")
        return Value(Load(name, indices, element))

    def shape_subscript(self, node) -> Value | None:
        """``buf.shape[d]`` as the dimension's value, else None."""
        base = node.value
        if not (isinstance(base, ast.Attribute) and base.attr == "shape"
                and isinstance(base.value, ast.Name)):
            return None
        buffer = self.scope.buffers.get(base.value.id)
        shape = buffer.type.shape if buffer else self._array_shape(base.value.id)
        if shape is None or not isinstance(node.slice, ast.Constant) or not (
                isinstance(node.slice.value, int) and 0 <= node.slice.value < len(shape)):
            raise self.error(node, f"'{ast.unparse(node)}' is not a known dimension",
                             "index .shape with a constant below the buffer's rank")
        return self.scope.dim(shape[node.slice.value])

    def _array_shape(self, name):
        array = self.scope.arrays.get(name)
        return array.shape if array else None

    def element(self, node: ast.Subscript, mode: str):
        """``(ir buffer name, indices, element type)`` of ``buf[...]``;
        checks the access ``mode`` ("read" / "write") is declared."""
        if not isinstance(node.value, ast.Name):
            raise self.error(node, f"'{ast.unparse(node.value)}' cannot be indexed",
                             "index a buffer parameter or a private/local array by name")
        name = node.value.id
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        indices = tuple(self.index(item) for item in items)
        if name in self.scope.arrays:
            array = self.scope.arrays[name]
            self.check_rank(node, name, len(indices), len(array.shape))
            return array.ir_name, indices, array.element
        buffer = self.scope.buffers.get(name)
        if buffer is None:
            raise self.undeclared(node, name, mode)
        denied = buffer.read_denied if mode == "read" else buffer.write_denied
        if denied is not None:
            raise self.error(node, *denied)
        self.scope.usage.note("reads" if mode == "read" else "writes", buffer.ir_name)
        self.check_rank(node, name, len(indices), buffer.type.rank)
        return buffer.ir_name, indices, buffer.type.element

    def undeclared(self, node, name: str, mode: str):
        """The error for indexing ``name``, which this kernel cannot see."""
        owner = self.scope.undeclared.get(name)
        python_value = self.scope.source.lookup(name) if name not in self.scope.locals else MISSING
        if owner is None and python_value is not MISSING:
            return self.error(node, f"'{name}' is a Python {type(python_value).__name__}; kernels cannot "
                                    "index Python values", "pass the data as a buffer parameter of the "
                                    "program, or compute the value in an @hpvm.kernel helper")
        if owner is not None:
            where = "ins=(...)" if mode == "read" else "outs=(...)"
            return self.error(node, f"node '{owner}' {mode}s buffer '{name}' but does not declare it",
                              f"add {name} to the node's {where}")
        return self.error(node, f"'{name}' is not a buffer this kernel can use",
                          "pass it as a buffer parameter")

    def check_rank(self, node, name: str, count: int, rank: int | None) -> None:
        if count == 1 or count == rank:
            return
        shown = "any length (flat)" if rank is None else f"rank {rank}"
        raise self.error(node, f"'{name}' has {shown} but is indexed with {count} indices",
                         f"index with 1 (flat) or {rank} indices" if rank else "index with 1 index")


def _may_fault(expr: Expr) -> bool:
    """True if evaluating ``expr`` may fail (a load, an integer division)."""
    return any(isinstance(e, Load) or (isinstance(e, Binary) and e.op in ("div", "rem")
                                       and not e.type.is_float) for e in walk(expr))


_PY_COMPARE = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
               "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def _compare(op: str, lhs: Expr, rhs: Expr) -> Expr:
    """A comparison, folded when both sides are constants."""
    if isinstance(lhs, Const) and isinstance(rhs, Const):
        return Const(_PY_COMPARE[op](lhs.value, rhs.value), BOOL)
    return Compare(op, lhs, rhs)
