"""Loop partitioning at clamped borders, after Halide's: the innermost
instance loop of a stencil split into a border, a steady part and a border.

Stencils clamp their neighbours' coordinates to the image::

    bx[y, x] = (img[y, min(max(x - 1, 0), W - 1)] + img[y, x] + ...) / 3

Inside the instance loop over ``x`` those clamps make the addresses of
adjacent instances non-consecutive, so LLVM vectorises the loads as
gathers.  For every instance but the few at the borders the clamps do
nothing.  ``partition`` finds each integer ``min``/``max`` of the innermost
instance id plus an offset against a bound, both the same for every
instance of the loop; the body with those clamps replaced by their
argument is right for every instance of ``[first, stop)``, where each
clamp is inactive.  The code generator runs that *steady* body there and
the kernel's own body on the instances before and after.

Border tests are partitioned the same way: a stencil written with a
branch (``if 0 < x && x < W - 1 { ... } else { ... }``) compares the
instance id plus an offset with a bound, and each such comparison has one
value over a range of instances.  A test against a constant is decided
for the instances past it (``0 < x``: true from 1), one against any other
bound for those before it (``x < W - 1``: true up to W - 2), which makes
the range between the interior.  The steady body has the decided value in
its place, so LLVM drops the branch and vectorises the instance loop.

Only names whose value is the same wherever they are read take part:
parameters and shape symbols nothing assigns, and variables declared once
with such a value and never assigned (``let x = instance_id(1)``,
``let left = x - 1``).  Loop variables and loads never do, so a clamp
inside a loop over a window, or of a loaded index, is left as it is.
"""
from __future__ import annotations

from dataclasses import dataclass

from hpvm.ir.analysis import assigned_variables
from hpvm.ir.kernel import (
    Binary, Call, Compare, Const, Expr, For, InstanceId, Intrinsic, KernelFunction, Let, Load,
    Stmt, Var,
)
from hpvm.ir.types import BOOL, I64
from hpvm.ir.visit import rewrite, walk

_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
"""Each order comparison and the one with its sides swapped."""
MAX_BORDER = 16
"""The widest border a test of the instance id may leave on either side:
``x < W / 2`` splits the row, and is left as it is."""
MAX_NODES = 64
"""The largest bound or offset expression computed before the loop."""


@dataclass(frozen=True)
class Partition:
    """The steady body and the bounds of the instances it is right for:
    ``first`` is at least each of ``lower`` and ``stop`` at most each of
    ``upper`` (expressions of parameters, shape symbols and the other
    dimensions' instance ids, known before the loop)."""

    body: tuple[Stmt, ...]
    lower: tuple[Expr, ...]
    upper: tuple[Expr, ...]


def partition(kernel: KernelFunction, dim: int) -> Partition | None:
    """The partition of ``kernel``'s instance loop over replication
    dimension ``dim``, or None when no clamp of that instance id can be
    removed."""
    return _Clamps(kernel, dim).partition()


class _Clamps:
    def __init__(self, kernel: KernelFunction, dim: int):
        self.kernel = kernel
        self.dim = dim
        declared: dict[str, list[Expr | None]] = {}
        for item in walk(kernel.body):
            if isinstance(item, Let):
                declared.setdefault(item.name, []).append(item.value)
            elif isinstance(item, For):
                declared.setdefault(item.var, []).append(None)
        assigned = assigned_variables(kernel.body)
        self.unknown = set(declared) | assigned
        """Names whose value this analysis does not know."""
        self.values = {name: values[0] for name, values in declared.items()
                       if len(values) == 1 and values[0] is not None and name not in assigned}
        """Variables declared once with a value and never assigned."""
        self._known_names: dict[str, bool] = {}
        self._resolved: dict[str, Expr | None] = {}
        self.lower: list[Expr] = []
        self.upper: list[Expr] = []

    def partition(self) -> Partition | None:
        body = rewrite(self.kernel.body, self._unclamped)
        if not self.lower and not self.upper:
            return None
        return Partition(body, tuple(self.lower), tuple(self.upper))

    def _unclamped(self, node) -> Expr | None:
        """``min(v, hi)`` / ``max(v, lo)`` with v the instance id plus an
        offset and the bound the same for all instances: ``v``, and the
        range where that holds is recorded.  A comparison of v with such
        a bound: its value in the steady range (:meth:`_decided`)."""
        if isinstance(node, Compare):
            return self._decided(node)
        if not (isinstance(node, Intrinsic) and node.name in ("min", "max")
                and node.type == I64):
            return None
        for value, bound in (node.args, reversed(node.args)):
            # x + offset >= bound  <=>  x >= bound - offset;
            # x + offset <= bound  <=>  x < bound - offset + 1.
            limit = self._limit(value, bound)
            if limit is None:
                continue
            if node.name == "max":
                self.lower.append(limit)
            else:
                self.upper.append(Binary("add", limit, Const(1, I64)))
            return value
        return None

    def _decided(self, node: Compare) -> Const | None:
        """The value of ``v < B`` (any order, either side) in the steady
        range, v the instance id plus an offset and B the same for every
        instance.  A border test against a constant (``0 < x``) is decided
        for the instances past it, one against the size (``x < W - 1``)
        for those before it: the range between is the interior.  Only
        borders of at most MAX_BORDER instances count: the limit a
        constant, or one name plus or minus a constant."""
        if node.op not in _FLIPPED:
            return None
        for value, op, bound in ((node.lhs, node.op, node.rhs),
                                 (node.rhs, _FLIPPED[node.op], node.lhs)):
            # v + c < B  <=>  v < B - c;  v + c <= B  <=>  v < B - c + 1 (and so on)
            limit = self._limit(value, bound)
            if limit is None:
                continue
            if op in ("le", "gt"):
                limit = Binary("add", limit, Const(1, I64))
            below = op in ("lt", "le")       # true for v under the limit
            near = _near(limit)
            if near is None or abs(near[1]) > MAX_BORDER:
                continue
            if near[0] is None:          # a constant limit: decided past it
                self.lower.append(limit)
                return Const(not below, BOOL)
            self.upper.append(limit)      # a name's: decided before it
            return Const(below, BOOL)
        return None

    def _limit(self, value: Expr, bound: Expr) -> Expr | None:
        """``bound - c`` where ``value`` is the instance id plus c and
        ``bound`` the same for every instance (variables replaced by their
        values); None otherwise."""
        offset = self._offset(value)
        if offset is None or not self._known(bound):
            return None
        bound = self._value(bound)
        return None if bound is None else Binary("sub", bound, offset)

    def _offset(self, expr: Expr) -> Expr | None:
        """``c`` where ``expr`` is the instance id plus ``c`` (``c`` known
        before the loop, with every variable replaced by its value)."""
        terms = self._linear(expr)
        if terms is None or terms[0] != 1:
            return None
        return terms[1]

    def _linear(self, expr: Expr) -> tuple[int, Expr] | None:
        """(coefficient of the instance id, the rest) of an i64 sum, or None."""
        if expr.type != I64:
            return None
        if isinstance(expr, Var) and expr.name in self.values:
            return self._linear(self.values[expr.name])
        if isinstance(expr, InstanceId) and expr.dim == self.dim:
            return 1, Const(0, I64)
        if self._known(expr):
            value = self._value(expr)
            return None if value is None else (0, value)
        if isinstance(expr, Binary) and expr.op in ("add", "sub"):
            lhs, rhs = self._linear(expr.lhs), self._linear(expr.rhs)
            if lhs is None or rhs is None:
                return None
            sign = 1 if expr.op == "add" else -1
            return lhs[0] + sign * rhs[0], Binary(expr.op, lhs[1], rhs[1])
        return None

    def _known(self, expr: Expr) -> bool:
        """Whether ``expr`` is the same for every instance of the loop and
        can be computed before it."""
        for item in walk(expr):
            if isinstance(item, (Load, Call)):
                return False
            if isinstance(item, InstanceId) and item.dim == self.dim:
                return False
            if isinstance(item, Var) and item.name in self.unknown and \
                    not self._known_name(item.name):
                return False
        return True

    def _known_name(self, name: str) -> bool:
        if name not in self._known_names:
            self._known_names[name] = name in self.values and self._known(self.values[name])
        return self._known_names[name]

    def _value(self, expr: Expr) -> Expr | None:
        """``expr`` with every variable replaced by its value; None when
        that grows past MAX_NODES (a long chain of variables)."""
        def substitute(node):
            if isinstance(node, Var) and node.name in self.values:
                if node.name not in self._resolved:
                    self._resolved[node.name] = self._value(self.values[node.name])
                return self._resolved[node.name] or node
            return None
        value = rewrite(expr, substitute)
        if any(isinstance(n, Var) and n.name in self.values for n in walk(value)) or \
                sum(1 for _ in walk(value)) > MAX_NODES:
            return None
        return value


def _near(expr: Expr) -> tuple[Expr | None, int] | None:
    """(n, c) where ``expr`` is ``n + c``, with n a name (or None) and c an
    integer, by adding up its constant terms; None for anything else."""
    if isinstance(expr, Const) and not expr.type.is_float:
        return None, int(expr.value)
    if isinstance(expr, Var):
        return expr, 0
    if not (isinstance(expr, Binary) and expr.op in ("add", "sub")):
        return None
    lhs, rhs = _near(expr.lhs), _near(expr.rhs)
    if lhs is None or rhs is None or (lhs[0] is not None and rhs[0] is not None) \
            or (expr.op == "sub" and rhs[0] is not None):
        return None
    sign = 1 if expr.op == "add" else -1
    return lhs[0] if lhs[0] is not None else rhs[0], lhs[1] + sign * rhs[1]
