"""Integer value ranges in a program dependence graph (pdg.py), for memory
disambiguation: two accesses to one buffer whose indices differ by a value
that is provably never zero touch different elements, so a load across a
store to the other element reads what it read before.

What is known comes from:

- **the nodes themselves**: constants; a loop's ``index`` runs from 0 to
  its trip count less one; instance ids are at least 0; the sizes of a
  buffer's dimensions at least 1 (no dimension is empty); sums, products,
  negations, min and max, and, for values at least 0, division, remainder
  and right shifts by a positive amount, and masks;
- **loop-carried recurrences**: a variable that a loop only ever
  multiplies by (or shifts left by, or adds) a constant that cannot make
  it smaller starts at its initial value's lower bound and never goes
  below it (doubling from 2: at least 2); one the loop only divides,
  shifts right or subtracts from never grows past its initial value's
  upper bound (and never below 0 by division from a value at least 0);
- **conditions**: in a ``while`` body, the loop's condition; in each
  branch of an ``if``, its condition or its negation (``a < b``, ``a <=
  b``, ``a != b`` and their conjunctions), as facts over affine forms:
  ``b - a - 1 >= 0``.

Everything is sound by default: an operation, a recurrence or a condition
not listed gives no bound, and no bound means the accesses may alias.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir.kernel import Assign, Binary, Const, Expr, Let, Var
from ..ir.visit import walk

INF = math.inf


@dataclass(frozen=True)
class Interval:
    """The integers from ``lo`` to ``hi`` (either may be infinite)."""

    lo: float = -INF
    hi: float = INF

    def excludes_zero(self) -> bool:
        return self.lo > 0 or self.hi < 0

    def __and__(self, other: "Interval") -> "Interval":
        return Interval(max(self.lo, other.lo), min(self.hi, other.hi))

    def __or__(self, other: "Interval") -> "Interval":
        return Interval(min(self.lo, other.lo), max(self.hi, other.hi))

    def __add__(self, other: "Interval") -> "Interval":
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> "Interval":
        return Interval(-self.hi, -self.lo)

    def scaled(self, factor: int) -> "Interval":
        ends = (_times(self.lo, factor), _times(self.hi, factor))
        return Interval(min(ends), max(ends))

    def times(self, other: "Interval") -> "Interval":
        ends = [_times(a, b) for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return Interval(min(ends), max(ends))


UNKNOWN = Interval()
UNIT = "1"
"""The atom of an affine form's constant term (node ids are integers)."""


def _times(a: float, b: float) -> float:
    return 0 if a == 0 or b == 0 else a * b


@dataclass(frozen=True)
class Fact:
    """``form >= 0`` (``nonzero``: ``form != 0``) over an affine form
    ((atom or UNIT, coefficient) pairs)."""

    form: tuple
    nonzero: bool = False


class ValueRanges:
    """The ranges of integer nodes of a PDG under construction, with the
    facts of the conditions that hold where it is built (a stack of
    scopes: push on entering a loop body or a branch, pop on leaving)."""

    def __init__(self, pdg, dimension_symbols: frozenset[str]):
        """``pdg``: the pdg.ProgramDependenceGraph under construction."""
        self.pdg = pdg
        self.graph = pdg.graph
        self.dimension_symbols = dimension_symbols
        self.scopes: list[list[Fact]] = [[]]
        self.carried: dict[int, Interval] = {}
        """Ranges of loop-carried values (phi nodes) from their recurrences."""

    # scopes -------------------------------------------------------------------
    def push(self, condition: int | None = None, holds: bool = True) -> None:
        """Enter a region where ``condition`` (a node) is ``holds``."""
        self.scopes.append(self._facts(condition, holds) if condition is not None else [])

    def pop(self) -> None:
        self.scopes.pop()

    def _facts(self, node: int, holds: bool) -> list[Fact]:
        facts = self.graph.nodes[node]
        label = facts["label"]
        operands = self.pdg.operands(node, repeated=True)
        if label == ("land" if holds else "lor"):
            return [f for operand in operands for f in self._facts(operand, holds)]
        if label == "not":
            return self._facts(operands[0], not holds)
        if label not in ("lt", "le", "eq", "ne") or len(operands) != 2:
            return []
        a, b = (self.pdg.affine(o) for o in operands)
        if label in ("eq", "ne"):
            return [Fact(frozen_form(difference(a, b)), nonzero=True)] if (label == "ne") == holds \
                else []
        strict = label == "lt"
        if not holds:  # not (a < b) is b <= a; not (a <= b) is b < a
            a, b, strict = b, a, not strict
        gap = difference(b, a)
        if strict:
            gap[UNIT] = gap.get(UNIT, 0) - 1
        return [Fact(frozen_form(gap))]

    # queries ------------------------------------------------------------------
    def nonzero(self, form: dict) -> bool:
        """Whether the affine ``form`` is provably never zero here."""
        if self.interval_of_form(form).excludes_zero():
            return True
        for fact in self._all_facts():
            known = dict(fact.form)
            if fact.nonzero:
                if known == form or known == _scaled(form, -1):
                    return True
                continue
            for sign in (1, -1):  # sign * form = known + c with c > 0: never zero
                rest = difference(_scaled(form, sign), known)
                if set(rest) <= {UNIT} and rest.get(UNIT, 0) > 0:
                    return True
        return False

    def interval_of_form(self, form: dict) -> Interval:
        total = Interval(0, 0)
        cache: dict[int, Interval] = {}
        for atom, coefficient in form.items():
            part = Interval(coefficient, coefficient) if atom == UNIT else \
                self.interval(atom, cache).scaled(coefficient)
            total = total + part
        return total

    def interval(self, node: int, cache: dict[int, Interval] | None = None) -> Interval:
        """The range of the integer node ``node`` here."""
        cache = {} if cache is None else cache
        if node not in cache:
            cache[node] = UNKNOWN  # a cycle (a phi's next) gives no bound
            cache[node] = self._by_label(node, cache) & self._bounds_from_facts(node)
        return cache[node]

    def _by_label(self, node: int, cache: dict) -> Interval:
        facts = self.graph.nodes[node]
        label = facts["label"]
        if facts.get("type") != "i":
            return UNKNOWN
        operands = self.pdg.operands(node, repeated=True)
        ranges = [self.interval(o, cache) for o in operands]
        if label == "const":
            return Interval(facts["value"], facts["value"])
        if label == "index":
            trip = self._loop_trip(facts["loop"])
            return Interval(0, self.interval(trip, cache).hi - 1 if trip is not None else INF)
        if label in ("instance_id", "instance_count"):
            return Interval(0 if label == "instance_id" else 1, INF)
        if label == "symbol":
            return Interval(1, INF) if facts["name"] in self.dimension_symbols else UNKNOWN
        if label == "phi":
            return self.carried.get(node, UNKNOWN)
        if label == "add":
            return sum(ranges[1:], ranges[0]) if ranges else UNKNOWN
        if label == "mul":
            total = ranges[0] if ranges else UNKNOWN
            for r in ranges[1:]:
                total = total.times(r)
            return total
        if label == "neg":
            return -ranges[0]
        if label in ("min", "max"):
            pick = min if label == "min" else max
            return Interval(pick(r.lo for r in ranges), pick(r.hi for r in ranges)) if ranges \
                else UNKNOWN
        if label == "select" and len(ranges) == 3:
            return ranges[1] | ranges[2]
        return _nonnegative(label, ranges)

    def _bounds_from_facts(self, node: int) -> Interval:
        """Bounds on ``node`` from facts over it alone (``node + c >= 0``)."""
        bound = UNKNOWN
        for fact in self._all_facts():
            form = dict(fact.form)
            if fact.nonzero or set(form) - {UNIT} != {node} or abs(form[node]) != 1:
                continue
            c = form.get(UNIT, 0)
            bound = bound & (Interval(-c, INF) if form[node] == 1 else Interval(-INF, c))
        return bound

    def _all_facts(self):
        return (fact for scope in self.scopes for fact in scope)

    def _loop_trip(self, loop: int) -> int | None:
        for source, _, data in self.graph.in_edges(loop, data=True):
            if data["kind"] == "data" and data["pos"] == "trip":
                return source
        return None

    # recurrences ----------------------------------------------------------------
    def carry(self, phi: int, name: str, body, initial: int) -> None:
        """Bound the loop-carried ``phi`` of variable ``name`` by what the
        loop ``body`` does to it (see the module docstring), from its
        ``initial`` value's range here."""
        direction = recurrence(name, body)
        start = self.interval(initial)
        if direction == "up" and start.lo >= 0:
            self.carried[phi] = Interval(start.lo, INF)
        elif direction == "down" and start.lo >= 0:
            self.carried[phi] = Interval(0, start.hi)
        elif direction == "down-by-subtraction":
            self.carried[phi] = Interval(-INF, start.hi)


def recurrence(name: str, body) -> str | None:
    """How every assignment to ``name`` in ``body`` changes it: "up" (times,
    shift left or plus a constant that keeps a value at least 0 at least
    as large), "down" (divided or shifted right by one: keeps a value at
    least 0 in [0, itself]), "down-by-subtraction" (minus a constant at
    least 0); None otherwise.  A step may go through a local: ``step =
    size * 2`` then ``size = step``, both directly in ``body``, the local
    given its value once, before that assignment (so ``size`` cannot have
    changed in between)."""
    assignments = [node for node in walk(body) if isinstance(node, Assign) and node.name == name]
    directions = {_step_direction(name, _through_local(name, node, body))
                  for node in assignments}
    if len(directions) != 1:
        return None
    return directions.pop()


def _through_local(name: str, assignment: Assign, body) -> Expr:
    """The value of ``assignment`` (to ``name``), or, where it assigns a
    local given its value once before it in ``body``, that local's value."""
    value = assignment.value
    if not isinstance(value, Var) or value.name == name:
        return value
    local = value.name
    definitions = [node for node in walk(body)
                   if isinstance(node, (Let, Assign)) and node.name == local]
    statements = list(body)
    if len(definitions) != 1 or definitions[0] not in statements or assignment not in statements \
            or statements.index(definitions[0]) > statements.index(assignment) \
            or definitions[0].value is None:
        return value
    return definitions[0].value


def _step_direction(name: str, value: Expr) -> str | None:
    if not isinstance(value, Binary):
        return None
    lhs, rhs = value.lhs, value.rhs
    if value.op in ("mul", "add") and _is_var(rhs, name) and isinstance(lhs, Const):
        lhs, rhs = rhs, lhs
    if not (_is_var(lhs, name) and isinstance(rhs, Const)):
        return None
    c = rhs.value
    if (value.op == "mul" and c >= 1) or (value.op == "shl" and c >= 0) or \
            (value.op == "add" and c >= 0):
        return "up"
    if (value.op == "div" and c >= 1) or (value.op == "shr" and c >= 0):
        return "down"
    if value.op == "sub" and c >= 0:
        return "down-by-subtraction"
    return None


def _is_var(expr: Expr, name: str) -> bool:
    return isinstance(expr, Var) and expr.name == name


def _nonnegative(label: str, ranges: list[Interval]) -> Interval:
    """div, rem, shr and and of values at least 0 by amounts that keep them
    so; anything else is unknown."""
    if len(ranges) != 2:
        return UNKNOWN
    a, b = ranges
    if label == "and":
        masks = [r.hi for r in ranges if r.lo >= 0]
        return Interval(0, min(masks)) if masks else UNKNOWN
    if a.lo < 0 or b.lo < 1 and label in ("div", "rem") or b.lo < 0:
        return UNKNOWN
    if label == "div":
        return Interval(a.lo // b.hi if b.hi < INF else 0, a.hi // b.lo if a.hi < INF else INF)
    if label == "rem":
        return Interval(0, min(a.hi, b.hi - 1))
    if label == "shr" and b.lo == b.hi:
        return Interval(int(a.lo) >> int(b.lo), a.hi if a.hi == INF else int(a.hi) >> int(b.lo))
    return UNKNOWN


def difference(a: dict, b: dict) -> dict:
    """The affine form ``a - b`` (zero coefficients dropped)."""
    result = dict(a)
    for atom, coefficient in b.items():
        result[atom] = result.get(atom, 0) - coefficient
    return {atom: c for atom, c in result.items() if c != 0}


def _scaled(form: dict, factor: int) -> dict:
    return {atom: c * factor for atom, c in form.items()}


def frozen_form(form: dict) -> tuple:
    """An affine form as the PDG keeps it: sorted (atom, coefficient) pairs."""
    return tuple(sorted(((atom, c) for atom, c in form.items() if c != 0), key=lambda p: str(p[0])))
