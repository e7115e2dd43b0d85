"""Whether a system of linear equalities and inequalities over integers
may have a solution: the solver of the affine dependence test
(affine_dependences.py).

A constraint is a ``dict`` from variable (any hashable) to coefficient,
the constant under the key ``ONE``; an equality says the sum is 0, an
inequality that it is at least 0. Equalities are solved for one of
their variables, one of coefficient 1 where they have one, and
substituted (Gaussian elimination); the variables of
the inequalities are then eliminated one by one (Fourier-Motzkin: each
lower bound of the variable paired with each upper bound). Each
constraint is tightened to integers on the way: its coefficients made
whole and divided by their common divisor, the constant rounded down
(``2x - 1 >= 0`` becomes ``x - 1 >= 0``), and an equality whose divisor
does not divide its constant has no solution (``2x = 1``). What has no
solution over the rationals has none over the integers, so "no
solution" is exact; "may have one" is the safe answer where the
elimination would grow past ``LIMIT`` constraints.
"""
from __future__ import annotations

from fractions import Fraction
from math import floor, gcd, lcm

ONE = "1"
"""The key of a constraint's constant."""

LIMIT = 400
"""The most inequalities elimination keeps before answering "may"."""


def solvable(equalities: list[dict], inequalities: list[dict]) -> bool:
    """Whether the system may have an integer solution (module text)."""
    inequalities = list(inequalities)
    pending = list(equalities)
    while pending:
        equality = _whole(pending.pop())
        if equality is None:
            return False
        variable = _unit_variable(equality)
        if variable is None:
            if equality.get(ONE, 0):
                return False
            continue
        value = {k: -c / equality[variable] for k, c in equality.items() if k != variable}
        pending = [_substituted(c, variable, value) for c in pending]
        inequalities = [_substituted(c, variable, value) for c in inequalities]
    return _inequalities_solvable(inequalities)


def _inequalities_solvable(inequalities: list[dict]) -> bool:
    while True:
        kept: dict[tuple, dict] = {}
        for constraint in inequalities:
            tight = _tightened(constraint)
            if _first_variable(tight) is None:
                if tight.get(ONE, 0) < 0:
                    return False
                continue
            kept.setdefault(tuple(sorted((repr(k), c) for k, c in tight.items())), tight)
        if not kept:
            return True
        inequalities = list(kept.values())
        if len(inequalities) > LIMIT:
            return True
        variables = {k for c in inequalities for k in c if k != ONE}
        variable = min(sorted(variables, key=repr), key=lambda v: _pairs(inequalities, v))
        lower = [c for c in inequalities if c.get(variable, 0) > 0]
        upper = [c for c in inequalities if c.get(variable, 0) < 0]
        rest = [c for c in inequalities if not c.get(variable, 0)]
        inequalities = rest + [_combined(low, up, variable) for low in lower for up in upper]


def _pairs(inequalities: list[dict], variable) -> int:
    """How many constraints eliminating ``variable`` makes."""
    up = sum(1 for c in inequalities if c.get(variable, 0) > 0)
    down = sum(1 for c in inequalities if c.get(variable, 0) < 0)
    return up * down - up - down


def _combined(lower: dict, upper: dict, variable) -> dict:
    """``lower`` and ``upper`` (positive and negative in ``variable``)
    added with weights that cancel it."""
    a, b = lower[variable], -upper[variable]
    keys = set(lower) | set(upper)
    combined = {k: b * lower.get(k, 0) + a * upper.get(k, 0) for k in keys}
    return {k: c for k, c in combined.items() if c}


def _substituted(constraint: dict, variable, value: dict) -> dict:
    """``constraint`` with ``variable`` replaced by the form ``value``."""
    factor = constraint.get(variable, 0)
    if not factor:
        return constraint
    out = {k: c for k, c in constraint.items() if k != variable}
    for k, c in value.items():
        out[k] = out.get(k, 0) + factor * c
    return {k: c for k, c in out.items() if c}


def _unit_variable(equality: dict):
    """The variable to solve ``equality`` for: one of coefficient 1 or -1
    where there is one (its value is then whole where the others are,
    which the tightening of what it is substituted into relies on)."""
    units = [k for k, c in equality.items() if k != ONE and abs(c) == 1]
    return min(units, key=repr) if units else _first_variable(equality)


def _first_variable(constraint: dict):
    return next((k for k, c in sorted(constraint.items(), key=lambda kc: repr(kc[0]))
                 if k != ONE and c), None)


def _integral(constraint: dict) -> tuple[dict, int]:
    """``constraint`` scaled to whole coefficients, and their divisor."""
    scale = lcm(*(Fraction(c).denominator for c in constraint.values())) or 1
    whole = {k: int(Fraction(c) * scale) for k, c in constraint.items() if c}
    divisor = 0
    for k, c in whole.items():
        if k != ONE:
            divisor = gcd(divisor, c)
    return whole, divisor


def _whole(equality: dict) -> dict | None:
    """``equality`` with whole coefficients divided by their divisor; None
    when the divisor does not divide its constant (no integer solution)."""
    whole, divisor = _integral(equality)
    if divisor == 0:
        return whole
    if whole.get(ONE, 0) % divisor:
        return None
    return {k: c // divisor for k, c in whole.items()}


def _tightened(inequality: dict) -> dict:
    """``inequality`` with whole coefficients divided by their divisor,
    the constant rounded down."""
    whole, divisor = _integral(inequality)
    if divisor <= 1:
        return whole
    out = {k: c // divisor for k, c in whole.items() if k != ONE}
    constant = floor(Fraction(whole.get(ONE, 0), divisor))
    return {**out, ONE: constant} if constant else out
