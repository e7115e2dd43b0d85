"""Calls in kernel bodies: casts (``f32(x)``, ``int(x)``), math functions
(``hpvm.lang``, ``math`` and numpy names), ``min`` / ``max`` / ``abs`` /
``len``, instance ids, atomics, and ``@hpvm.kernel`` helpers (inlined by
statements.py)."""
from __future__ import annotations

import ast
import builtins
import math

import numpy as np

from ..ir.kernel import (
    AtomicUpdate, Barrier, Cast, Const, InstanceCount, InstanceId, Intrinsic, Let, Var,
)
from ..ir.types import BOOL, F64, I64, ScalarType
from .source import MISSING
from .typing_rules import Value, convert, unify

MATH_NAMES = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
              "tanh": "tanh", "floor": "floor", "ceil": "ceil", "pow": "pow",
              "fabs": "abs", "absolute": "abs", "fmin": "min", "fmax": "max",
              "minimum": "min", "maximum": "max"}
FLOAT_ONLY = ("sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "ceil", "pow")
PY_FOLD = {"sqrt": math.sqrt, "exp": math.exp, "log": math.log, "sin": math.sin,
           "cos": math.cos, "tanh": math.tanh, "floor": math.floor, "ceil": math.ceil,
           "abs": abs}
BUILTIN_CASTS = {builtins.int: I64, builtins.float: F64, builtins.bool: BOOL}


def math_intrinsic(callee) -> str | None:
    """The intrinsic a Python math / numpy / hpvm.lang function stands for."""
    marker = getattr(callee, "hpvm_marker", None)
    if marker in MATH_NAMES:
        return MATH_NAMES[marker]
    name = getattr(callee, "__name__", None)
    if name in MATH_NAMES and (getattr(math, name, None) is callee
                               or getattr(np, name, None) is callee):
        return MATH_NAMES[name]
    return {builtins.abs: "abs", builtins.min: "min", builtins.max: "max"}.get(callee)


class CallMixin:
    """Translation of ``ast.Call`` for ExprTranslator subclasses."""

    def _expr_Call(self, node):
        if node.keywords and getattr(self.callee(node), "hpvm_marker", None) not in ("loop",
                                                                                     "reduce"):
            raise self.error(node, f"keyword arguments are not supported in '{ast.unparse(node.func)}(...)'",
                             "pass arguments by position")
        callee = self.callee(node)
        if isinstance(callee, ScalarType) or callee in BUILTIN_CASTS:
            return self.cast(node, BUILTIN_CASTS.get(callee, callee))
        if getattr(callee, "hpvm_kernel", None) is not None:
            return self.call_helper(node, callee)
        folded = self.builtin_fold(node, callee)
        if folded is not None:
            return folded
        intrinsic = math_intrinsic(callee)
        if intrinsic is not None:
            return self.intrinsic(node, intrinsic)
        marker = getattr(callee, "hpvm_marker", None)
        if marker is not None:
            return self.marker_call(node, marker)
        if callee is builtins.len:
            return self.length(node)
        name = ast.unparse(node.func)
        if callee is builtins.range:
            raise self.error(node, "range(...) is only allowed as the iterable of a for loop",
                             "write: for k in range(n):")
        raise self.error(node, f"call of '{name}' is not supported in kernels",
                         "kernels may call casts (f32(x)), math functions, min/max/abs, "
                         "hpvm.lang intrinsics and @hpvm.kernel helpers")

    def callee(self, node):
        callee = self.python_object(node.func)
        if callee is MISSING:
            raise self.error(node.func, f"'{ast.unparse(node.func)}' is not a known function",
                             "define it as an @hpvm.kernel helper")
        return callee

    def arguments(self, node, count: int) -> list[Value]:
        if len(node.args) != count:
            raise self.error(node, f"'{ast.unparse(node.func)}' takes {count} argument(s), "
                                   f"got {len(node.args)}", "")
        return [self.scalar(arg) for arg in node.args]

    def cast(self, node, target: ScalarType) -> Value:
        (value,) = self.arguments(node, 1)
        if isinstance(value.expr, Const):
            converted = value.expr.value != 0 if target.is_bool else value.expr.value
            if target.is_int and isinstance(converted, float):
                converted = math.trunc(converted)
            return Value(Const(converted, target))
        self.settle(value, value.type)
        return Value(value.expr if value.type == target else Cast(value.expr, target))

    def intrinsic(self, node, name: str) -> Value:
        if name in ("min", "max") and len(node.args) > 2:
            values = [self.scalar(arg) for arg in node.args]
        else:
            values = self.arguments(node, 2 if name in ("min", "max", "pow") else 1)
        if len(values) == 1:
            return self.unary_intrinsic(node, name, values[0])
        result = values[0]
        for other in values[1:]:
            a, b, weak = self.rule(node, unify, result, other, f"'{ast.unparse(node)}'")
            self.settle(result, a.type)
            self.settle(other, b.type)
            if name == "pow" and not a.type.is_float:
                raise self.error(node, f"pow needs floats, not {a.type}", "cast: pow(f32(x), y)")
            result = Value(Intrinsic(name, (a, b)), weak)
        return result

    def unary_intrinsic(self, node, name: str, value: Value) -> Value:
        if value.weak and isinstance(value.expr, Const) and name in PY_FOLD:
            folded = PY_FOLD[name](value.expr.value)
            if name in FLOAT_ONLY:
                folded = float(folded)
            return Value(Const(folded, value.type if name == "abs" else F64), weak=True)
        if name in FLOAT_ONLY and not value.type.is_float:
            raise self.error(node, f"{name} needs a float, not {value.type}",
                             f"cast the argument: {name}(f32({ast.unparse(node.args[0])}))")
        return Value(Intrinsic(name, (value.expr,)), value.weak)

    def length(self, node) -> Value:
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
            raise self.error(node, "len() takes one buffer", "write len(buf)")
        name = node.args[0].id
        shape = self.scope.buffers[name].type.shape if name in self.scope.buffers else (
            self._array_shape(name))
        if not shape:
            raise self.error(node, f"'{name}' has no known length", "pass the length as a parameter")
        return self.scope.dim(shape[0])

    def marker_call(self, node, marker: str) -> Value:
        if marker in ("instance_id", "instance_count"):
            return self.instance(node, marker)
        if marker.startswith("atomic_"):
            return self.atomic(node, marker[len("atomic_"):], result_wanted=True)
        if marker == "reduce":
            return self.reduction(node)
        if marker == "barrier":
            raise self.error(node, "barrier() is a statement, not a value", "write barrier() on its own line")
        raise self.error(node, f"'{marker}(...)' is not allowed here",
                         "see hpvm.lang for where each construct goes")

    def instance(self, node, marker: str) -> Value:
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or (
                node.args[0].value not in (0, 1, 2)):
            raise self.error(node, f"{marker} takes a constant dimension 0, 1 or 2",
                             f"write {marker}(0)")
        cls = InstanceId if marker == "instance_id" else InstanceCount
        return Value(cls(node.args[0].value))

    def atomic(self, node, op: str, result_wanted: bool) -> Value | None:
        if len(node.args) != 2 or not isinstance(node.args[0], ast.Subscript):
            raise self.error(node, f"atomic_{op} takes an element and a value",
                             f"write atomic_{op}(buf[i], value)")
        value = self.scalar(node.args[1])
        buffer, indices, element = self.element(node.args[0], "write")
        converted = self.rule(node, convert, value, element, f"atomic_{op} on '{buffer}'")
        self.settle(value, element)
        result = None
        if result_wanted:
            result = self.scope.names.fresh(f"{self.scope.local_prefix}old")
            self.emit(Let(result, element, None))
        self.emit(AtomicUpdate(op, buffer, indices, converted, result))
        if result is None:
            return None
        return Value(Var(result, element))

    def barrier(self, node) -> None:
        if node.args:
            raise self.error(node, "barrier() takes no arguments", "write barrier()")
        self.emit(Barrier())
