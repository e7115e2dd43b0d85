"""Whether two iterations of a loop may touch one element of a buffer,
decided from affine indices and the bounds of the loops around them.

PolyBench's covariance stores each sum and its mirror in one iteration::

    for i in 0 .. M { for j in i .. M { cov[i, j] = ...; cov[j, i] = cov[i, j] } }

Iteration i stores row i from column i on, and column i from row i on.
No index position holds ``i`` in every access, so the simple test of the
loop passes (the loop's variable at one same position everywhere) sees
iterations that may share elements. They do not: ``cov[i, j]`` at
iteration i and ``cov[j', i']`` at iteration i' are one element when
``i = j'`` and ``j = i'``, and with ``j >= i`` and ``j' >= i'`` that gives
``i = j' >= i' = j >= i``: the same iteration. The mirror store of a
symmetric result, the diagonal read beside its row, a triangle's row and
column are such accesses.

For two accesses, one of them a store, each index is read as an affine
form (a sum of integer multiples of variables and a constant) of the
loop's variable at that access's iteration, the variables of the loops
around the access inside the loop (bounded by their start and stop,
``min`` and ``max`` read as several bounds), and names the loop does not
change (shared by both iterations). Values the body declares once and
never assigns stand for their expressions; anything else (a variable the
body assigns, a load, a product of variables) is an unknown, which
leaves its equation free. The two accesses touch one element when every
index is equal, and the question whether they do in two iterations in
a given order is a linear system (linear_system.py): no solution, and
they never do.
"""
from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

from ..ir.analysis import assigned_variables
from ..ir.kernel import (
    AtomicUpdate, Binary, Call, Cast, Const, Expr, For, If, Intrinsic, Let, Load, Stmt, Store,
    Unary, Var, While,
)
from ..ir.visit import walk
from .linear_system import ONE, solvable


LATER = ({("var", 1): 1, ("var", 0): -1, ONE: -1},)
"""The second access's iteration of the loop after the first's."""


@dataclasses.dataclass(frozen=True)
class Access:
    """A load or store of a buffer, and the loops around it inside the
    statements looked at, outermost first."""

    indices: tuple[Expr, ...] | None
    """None: anywhere in the buffer (it is passed to a helper)."""
    store: bool
    loops: tuple[For, ...]


def accesses(stmts: tuple[Stmt, ...], buffer: str) -> list[Access]:
    """The distinct loads, stores and atomic updates (as stores) of
    ``buffer`` in ``stmts``, and each call passing it (a store anywhere)."""
    found: dict[Access, None] = {}

    def visit(block: tuple[Stmt, ...], loops: tuple[For, ...]) -> None:
        for stmt in block:
            if isinstance(stmt, For):
                expressions, inner = (stmt.start, stmt.stop), [(stmt.body, (*loops, stmt))]
            elif isinstance(stmt, If):
                expressions, inner = (stmt.cond,), [(stmt.then_body, loops),
                                                   (stmt.else_body, loops)]
            elif isinstance(stmt, While):
                expressions, inner = (stmt.cond,), [(stmt.body, loops)]
            else:
                expressions, inner = (stmt,), []
            for node in walk(expressions):
                if isinstance(node, (Load, Store, AtomicUpdate)) and node.buffer == buffer:
                    found[Access(node.indices, not isinstance(node, Load), loops)] = None
                elif isinstance(node, Call) and any(isinstance(a, Var) and a.name == buffer
                                                    for a in node.args):
                    found[Access(None, True, loops)] = None
            for body, around in inner:
                visit(body, around)
    visit(stmts, ())
    return list(found)


def apart_in_iterations(loop: For, buffer: str) -> bool:
    """Whether no two different iterations of ``loop`` touch one element
    of ``buffer``, one of them storing it (module text)."""
    found = accesses(loop.body, buffer)
    return _never_meet(loop, loop.body, itertools.product(found, repeat=2))


def never_after(loop: For, first_body: tuple[Stmt, ...], second_body: tuple[Stmt, ...],
                buffer: str) -> bool:
    """Whether, both bodies running in the iterations of ``loop`` (its
    variable read by both), no access of ``first_body`` to ``buffer``
    touches an element at a later iteration than an access of
    ``second_body`` touching it, one of them storing it: the second body
    may then run in the same iterations as the first rather than after
    all of them (loop fusion)."""
    pairs = itertools.product(accesses(second_body, buffer), accesses(first_body, buffer))
    return _never_meet(loop, first_body + second_body, pairs)


def swap_keeps_order(outer: For, buffer: str) -> bool:
    """Whether swapping ``outer`` with the loop in it (a perfect nest, both
    loops stepping up) keeps in order every two iterations touching one
    element of ``buffer``, one of them storing it: no such pair runs
    later along one loop and earlier along the other."""
    inner = outer.body[0]
    found = accesses(outer.body, buffer)
    crossing = ({("var", 1): 1, ("var", 0): -1, ONE: -1},           # later along outer
                {("loop", id(inner), 0): 1, ("loop", id(inner), 1): -1, ONE: -1})  # earlier
    return _never_meet(outer, outer.body, itertools.product(found, repeat=2), crossing)


def never_meets(loop: For, element: Access, others: list[Access]) -> bool:
    """Whether none of ``others`` (accesses in ``loop``'s body) touches, in
    any iteration, the element ``element`` stores (its indices unchanged
    by the loop): element promotion keeps that element in a variable."""
    return _never_meet(loop, loop.body, ((element, other) for other in others), ())


def _never_meet(loop: For, body: tuple[Stmt, ...], pairs, order: tuple[dict, ...] = LATER
                ) -> bool:
    """Whether no pair (first, second) of accesses in ``body``, one a
    store, touches one element with ``second``'s iteration where
    ``order`` places it (_Forms.may_meet)."""
    forms = _Forms(loop.var, body)
    return not any(forms.may_meet(loop, first, second, order)
                   for first, second in pairs if first.store or second.store)


class _Forms:
    """Affine forms of the indices of the accesses in ``body``, the body
    of a loop over ``var``."""

    def __init__(self, var: str, body: tuple[Stmt, ...]):
        self.var = var
        assigned = assigned_variables(body)
        declared: dict[str, list] = {}
        for node in walk(body):
            if isinstance(node, Let):
                declared.setdefault(node.name, []).append(node.value)
            elif isinstance(node, For):
                declared.setdefault(node.var, []).append(None)
        self.values = {name: values[0] for name, values in declared.items()
                       if len(values) == 1 and values[0] is not None and name not in assigned}
        self.local = set(declared) | assigned | {var}

    def may_meet(self, loop: For, first: Access, second: Access,
                 order: tuple[dict, ...] = LATER) -> bool:
        """Whether ``first`` at some iteration of ``loop`` and ``second``
        at an iteration ``order`` places (by default a later one) may
        touch one element; ``order``: inequalities over the variables'
        keys, ("var", side) for ``loop``'s, ("loop", id, side) for a loop
        in it."""
        if first.indices is None or second.indices is None or \
                len(first.indices) != len(second.indices):
            return True
        equalities, inequalities, forms = [], list(order), []
        for side, access in enumerate((first, second)):
            forms.append([self.form(index, side, access.loops) for index in access.indices])
            for at, each in enumerate((loop, *access.loops)):
                key = ("var", side) if at == 0 else ("loop", id(each), side)
                inequalities += self._bounds(each, key, side, access.loops[:max(at - 1, 0)])
                equalities += self._steps(each, key, side, access.loops[:max(at - 1, 0)])
        equalities += [_minus(one, other) for one, other in zip(*forms)
                       if one is not None and other is not None]
        return solvable(equalities, inequalities)

    def _steps(self, loop: For, key, side: int, loops: tuple[For, ...]) -> list[dict]:
        """``var = start + step * t`` for a count ``t`` of steps where the
        loop steps by more than 1 (the count's bound is among _bounds)."""
        start = self.form(loop.start, side, loops) if abs(loop.step) > 1 else None
        return [] if start is None else [
            _minus({key: 1, ("steps", key): -loop.step}, start)]

    def _bounds(self, loop: For, key, side: int, loops: tuple[For, ...]) -> list[dict]:
        """The constraints on ``loop``'s variable (``key``) from its bounds,
        read inside ``loops`` at ``side``'s iteration, and on its count of
        steps where it steps by more than 1."""
        counted = [{("steps", key): 1}] if abs(loop.step) > 1 else []
        return counted + self._range(loop, key, side, loops)

    def _range(self, loop: For, key, side: int, loops: tuple[For, ...]) -> list[dict]:
        forward = loop.step > 0
        lows = _terms(loop.start if forward else loop.stop, "max" if forward else "min")
        highs = _terms(loop.stop if forward else loop.start, "min" if forward else "max")
        out = []
        for term in lows:    # var >= start (var >= stop + 1 stepping down)
            form = self.form(term, side, loops)
            if form is not None:
                out.append(_minus({key: 1, ONE: 0 if forward else -1}, form))
        for term in highs:   # var <= stop - 1 (var <= start stepping down)
            form = self.form(term, side, loops)
            if form is not None:
                out.append(_minus(form, {key: 1, ONE: 1 if forward else 0}))
        return out

    def form(self, expr: Expr, side: int, loops: tuple[For, ...]) -> dict | None:
        """``expr`` at ``side``'s iteration, inside ``loops``, as an affine
        form; None where it is not one (an unknown)."""
        if isinstance(expr, Const) and isinstance(expr.value, int) and \
                not isinstance(expr.value, bool):
            return {ONE: Fraction(expr.value)}
        if isinstance(expr, Var):
            return self._variable(expr.name, side, loops)
        if isinstance(expr, Cast) and expr.type.kind == "int" and \
                getattr(expr.value.type, "kind", None) == "int":
            return self.form(expr.value, side, loops)
        if isinstance(expr, Unary) and expr.op == "neg":
            inner = self.form(expr.operand, side, loops)
            return None if inner is None else _scaled(inner, -1)
        if isinstance(expr, Binary) and expr.op in ("add", "sub", "mul"):
            lhs, rhs = self.form(expr.lhs, side, loops), self.form(expr.rhs, side, loops)
            if lhs is not None and rhs is not None:
                if expr.op != "mul":
                    return _plus(lhs, rhs if expr.op == "add" else _scaled(rhs, -1))
                if set(lhs) <= {ONE} or set(rhs) <= {ONE}:
                    constant, other = (lhs, rhs) if set(lhs) <= {ONE} else (rhs, lhs)
                    return _scaled(other, constant.get(ONE, 0))
        return self._fixed(expr)

    def _variable(self, name: str, side: int, loops: tuple[For, ...]) -> dict | None:
        for at in range(len(loops) - 1, -1, -1):
            if loops[at].var == name:
                return {("loop", id(loops[at]), side): Fraction(1)}
        if name == self.var:
            return {("var", side): Fraction(1)}
        if name in self.values:
            return self.form(self.values[name], side, loops)
        if name in self.local:
            return None
        return {("name", name): Fraction(1)}

    def _fixed(self, expr: Expr) -> dict | None:
        """An expression the loop does not change, as one shared unknown;
        None for any other."""
        if any(isinstance(n, (Load, Call, Intrinsic)) or isinstance(n, Var) and
               n.name in self.local for n in walk(expr)):
            return None
        return {("expr", expr): Fraction(1)}


def _terms(bound: Expr, combining: str) -> list[Expr]:
    """The bounds ``bound`` stands for: each argument of a ``min`` (an
    upper bound) or ``max`` (a lower bound), ``combining`` names which."""
    if isinstance(bound, Intrinsic) and bound.name == combining:
        return [t for arg in bound.args for t in _terms(arg, combining)]
    return [bound]


def _plus(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0) + c
    return {k: c for k, c in out.items() if c}


def _minus(a: dict, b: dict) -> dict:
    return _plus(a, _scaled(b, -1))


def _scaled(a: dict, factor) -> dict:
    return {k: c * factor for k, c in a.items() if c * factor}
