"""Loops that count: a ``while`` loop that is a counted loop in disguise.

``while v < bound { ...; v = v + 1 }`` runs ``bound - v`` times with ``v``
going up by one, exactly as ``for v in v0 .. bound``; the program
dependence graph (pdg.py) builds both as one counted loop, so that
matchers and value ranges see one form.
"""
from __future__ import annotations

from ..ir.analysis import assigned_variables
from ..ir.kernel import Assign, Binary, Compare, Const, Expr, Load, Store, AtomicUpdate, Var, While
from ..ir.visit import walk


def counted_while(statement: While, env: dict) -> tuple[str, Expr, bool] | None:
    """(variable, bound, inclusive) of a while loop that counts: ``while v
    < bound`` (or ``<=``, or the bound on the left) whose body ends with
    ``v = v + 1``, assigns ``v`` nowhere else and changes nothing the bound
    reads; None for any other loop."""
    cond, body = statement.cond, statement.body
    if not isinstance(cond, Compare) or not body:
        return None
    if cond.op in ("lt", "le") and isinstance(cond.lhs, Var):
        variable, bound, inclusive = cond.lhs.name, cond.rhs, cond.op == "le"
    elif cond.op in ("gt", "ge") and isinstance(cond.rhs, Var):
        variable, bound, inclusive = cond.rhs.name, cond.lhs, cond.op == "ge"
    else:
        return None
    last = body[-1]
    step = last.value if isinstance(last, Assign) and last.name == variable else None
    increments = isinstance(step, Binary) and step.op == "add" and (
        (_is_name(step.lhs, variable) and _is_one(step.rhs))
        or (_is_name(step.rhs, variable) and _is_one(step.lhs)))
    changed = assigned_variables(body[:-1])
    reads = {node.name for node in _variables(bound)}
    if not increments or variable in changed or reads & (changed | {variable}) \
            or env.get(variable) is None or _stored(body) and _loads(bound):
        return None
    return variable, bound, inclusive


def _is_name(expr: Expr, name: str) -> bool:
    return isinstance(expr, Var) and expr.name == name


def _is_one(expr: Expr) -> bool:
    return isinstance(expr, Const) and expr.value == 1


def _variables(expr: Expr) -> list[Var]:
    return [node for node in walk(expr) if isinstance(node, Var)]


def _loads(expr: Expr) -> bool:
    return any(isinstance(node, Load) for node in walk(expr))


def _stored(body) -> bool:
    return any(isinstance(node, (Store, AtomicUpdate)) for node in walk(body))
