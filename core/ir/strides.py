"""How far apart the elements a load reads are, one step of a loop or one
instance apart: the affine coefficient of a loop variable or an instance
id in the load's indices.

``IndexStrides(body)`` resolves variables declared once (``let``) and
never assigned to their values, so ``let base = row * 128; x[base + a]``
has stride 1 along ``a`` and 128 along the instance behind ``row``.  A
coefficient is an integer when the index is affine in the unit with a
constant factor, and None when it is not known to be (a product of two
varying terms, a division, a variable assigned somewhere).  Used by the
cpu target to choose which dimension its vector lanes run along.
"""
from __future__ import annotations

from typing import Callable

from .analysis import assigned_variables
from .kernel import Binary, Cast, Const, Expr, InstanceId, Let, Stmt, Var
from .visit import children, walk

Unit = Callable[[Expr], bool]
"""Whether an expression is the unit itself (a loop variable, an instance id)."""


class IndexStrides:
    """Coefficients of units in the index expressions of one kernel body."""

    def __init__(self, body: tuple[Stmt, ...]):
        lets: dict[str, list[Expr]] = {}
        for node in walk(body):
            if isinstance(node, Let):
                lets.setdefault(node.name, []).append(node.value)
        assigned = assigned_variables(body)
        self.definitions = {name: values[0] for name, values in lets.items()
                            if len(values) == 1 and name not in assigned}
        self.unknown = assigned | {name for name, values in lets.items() if len(values) > 1}

    def coefficient(self, expr: Expr, unit: Unit) -> int | None:
        """d expr / d unit, when expr is affine in the unit with a constant
        factor; None otherwise."""
        if unit(expr):
            return 1
        if isinstance(expr, (Const, InstanceId)):
            return 0
        if isinstance(expr, Var):
            if expr.name in self.definitions:
                return self.coefficient(self.definitions[expr.name], unit)
            return None if expr.name in self.unknown else 0
        if isinstance(expr, Cast):
            return self.coefficient(expr.value, unit)
        if isinstance(expr, Binary):
            return self._binary(expr, unit)
        parts = [self.coefficient(child, unit) for child in children(expr)]
        return 0 if all(p == 0 for p in parts) else None

    def element_stride(self, indices: tuple[Expr, ...], unit: Unit) -> int | None:
        """How many elements apart (row-major) an access at ``indices`` is
        for adjacent values of the unit, when only its last index moves;
        else None."""
        parts = [self.coefficient(index, unit) for index in indices]
        if not parts or any(p != 0 for p in parts[:-1]):
            return None
        return parts[-1]

    def _binary(self, expr: Binary, unit: Unit) -> int | None:
        a, b = self.coefficient(expr.lhs, unit), self.coefficient(expr.rhs, unit)
        if a is None or b is None:
            return None
        if expr.op == "add":
            return a + b
        if expr.op == "sub":
            return a - b
        if a == 0 and b == 0:
            return 0
        if expr.op == "mul":
            if a == 0 and (factor := self._constant(expr.lhs)) is not None:
                return factor * b
            if b == 0 and (factor := self._constant(expr.rhs)) is not None:
                return a * factor
        return None

    def _constant(self, expr: Expr) -> int | None:
        if isinstance(expr, Var) and expr.name in self.definitions:
            return self._constant(self.definitions[expr.name])
        if isinstance(expr, Cast):
            return self._constant(expr.value)
        return int(expr.value) if isinstance(expr, Const) and not expr.type.is_float else None


def loop_variable(name: str) -> Unit:
    return lambda expr: isinstance(expr, Var) and expr.name == name


def instance_of(dim: int) -> Unit:
    """The instance id of ``dim`` (variables holding it resolve to it)."""
    return lambda expr: isinstance(expr, InstanceId) and expr.dim == dim
