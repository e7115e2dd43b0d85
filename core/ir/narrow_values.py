"""Which 64-bit integer values of a kernel fit in 32 bits when every size
does: what a back end may compute in 32-bit arithmetic, bit for bit.

The IR computes indices in i64.  On a GPU a 64-bit add or compare is two
instructions or more, and address arithmetic dominates a memory-bound
kernel.  Given that every instance id lies in ``[0, limit)`` and every
replication count and buffer dimension (shape symbol) in ``[0, limit]``,
which a back end checks at run time before it runs the 32-bit code, an
interval analysis bounds each i64 expression and variable.  A value is
*narrow* when it and each i64 value it is computed from lie in the range
of a 32-bit int: computing it in 32 bits then gives the same bits (no
operation overflows in either width).

Known: constants, instance ids and counts, shape symbols; sums,
differences and products; division and remainder by a constant other
than 0 and -1; min and max; selects; casts from integer types of 32 bits
or fewer and loads of them.  Variables take the join of every value they
are given (``let``, assignments, a loop's range), iterated to a fixed
point; one that still grows after a few rounds (a counter) is unbounded.
Anything else (scalar parameters, i64 loads, shifts, calls) is unbounded.
"""
from __future__ import annotations

import math

from .kernel import (
    Assign, Binary, Cast, Const, Expr, For, InstanceCount, InstanceId, Intrinsic, KernelFunction,
    Let, Load, Select, Var,
)
from .types import I64
from .visit import walk

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
Interval = tuple[float, float]
TOP: Interval = (-math.inf, math.inf)
BOTTOM: Interval = (math.inf, -math.inf)
ROUNDS = 4
"""Rounds of the fixed point before a variable still growing is unbounded."""
NARROW_OPS = frozenset({"add", "sub", "mul", "div", "rem"})


class NarrowValues:
    """The narrow i64 values of ``kernel`` (see the module docstring);
    ``symbols`` are its shape symbols, each a buffer dimension."""

    def __init__(self, kernel: KernelFunction, symbols: set[str], limit: int):
        self.limit = limit
        self.symbols = symbols
        self._memo: dict[Expr, bool] = {}
        sources: dict[str, list] = {}
        for node in walk(kernel.body):
            if isinstance(node, Let) and node.type == I64:
                sources.setdefault(node.name, []).append(node.value)
            elif isinstance(node, Assign) and node.name in sources:
                sources[node.name].append(node.value)
            elif isinstance(node, For):
                sources.setdefault(node.var, []).append(node)
        for node in walk(kernel.body):  # an assignment before its let, or of a non-i64
            if isinstance(node, Assign) and node.name not in sources:
                sources[node.name] = [None]
        self._sources = sources
        self.ranges: dict[str, Interval] = {name: BOTTOM for name in sources}
        self._solve()
        self.variables: set[str] = {name for name in sources if _fits(self.ranges[name])}
        """Variables given only narrow values (the greatest such set: their
        ranges are known to fit, this asks only that each value renders in
        32 bits, other narrow variables included)."""
        while True:
            self._memo = {}
            kept = {name for name in self.variables
                    if all(self._source_is_narrow(v) for v in sources[name])}
            if kept == self.variables:
                break
            self.variables = kept

    # -- the fixed point --------------------------------------------------
    def _solve(self) -> None:
        for round_ in range(3 * ROUNDS):
            changed = False
            for name, values in self._sources.items():
                new = _clipped(_join_all(self._source_range(v) for v in values))
                old = self.ranges[name]
                if new != old:
                    grew = old != BOTTOM and (new[0] < old[0] or new[1] > old[1])
                    self.ranges[name] = TOP if grew and round_ >= ROUNDS else new
                    changed = True
            if not changed:
                return
        self.ranges = {name: TOP for name in self.ranges}  # never settled: know nothing

    def _source_range(self, value) -> Interval:
        if value is None:
            return TOP
        if isinstance(value, For):
            start, stop = self.interval(value.start), self.interval(value.stop)
            if value.step > 0:
                return (start[0], stop[1] - 1) if start[0] <= stop[1] - 1 else start
            return (stop[0] + 1, start[1]) if stop[0] + 1 <= start[1] else start
        return self.interval(value)

    def _source_is_narrow(self, value) -> bool:
        if value is None:
            return False
        if isinstance(value, For):
            return self.is_narrow(value.start) and self.is_narrow(value.stop)
        return self.is_narrow(value)

    # -- intervals --------------------------------------------------------
    def interval(self, e: Expr) -> Interval:
        """Bounds of ``e``'s value (TOP where unknown)."""
        if isinstance(e, Const):
            return (int(e.value), int(e.value)) if e.type.is_int else TOP
        if isinstance(e, InstanceId):
            return (0, self.limit - 1)
        if isinstance(e, InstanceCount):
            return (0, self.limit)
        if isinstance(e, Var):
            if e.name in self.ranges:
                return self.ranges[e.name]
            return (0, self.limit) if e.name in self.symbols else TOP
        if isinstance(e, Binary) and e.type.is_int:
            return self._binary(e)
        if isinstance(e, Intrinsic) and e.name in ("min", "max") and e.type.is_int:
            a, b = (self.interval(arg) for arg in e.args)
            if BOTTOM in (a, b):
                return BOTTOM
            pick = min if e.name == "min" else max
            return (pick(a[0], b[0]), pick(a[1], b[1]))
        if isinstance(e, Select):
            return _join_all((self.interval(e.if_true), self.interval(e.if_false)))
        if isinstance(e, Cast) and e.type.is_int and e.value.type.is_int:
            return _meet(self.interval(e.value), _type_range(e.value.type))
        if isinstance(e, Load) and e.type.is_int and e.type.bits <= 32:
            return _type_range(e.type)
        return TOP

    def _binary(self, e: Binary) -> Interval:
        a, b = self.interval(e.lhs), self.interval(e.rhs)
        if BOTTOM in (a, b):
            return BOTTOM
        if e.op == "add":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "sub":
            return (a[0] - b[1], a[1] - b[0])
        if e.op == "mul":
            if TOP in (a, b):
                return TOP
            ends = [x * y for x in a for y in b]
            return (min(ends), max(ends))
        divisor = _safe_divisor(e)
        if divisor is None or TOP == a or math.isinf(a[0]) or math.isinf(a[1]):
            return TOP
        if e.op == "div":
            ends = [_c_quotient(int(x), divisor) for x in a]
            return (min(ends), max(ends))
        if e.op == "rem":
            most = abs(divisor) - 1
            return (0 if a[0] >= 0 else -most, min(a[1], most) if a[0] >= 0 else most)
        return TOP

    # -- narrowness -------------------------------------------------------
    def is_narrow(self, e: Expr) -> bool:
        """Whether ``e`` (i64) and every i64 value it is computed from fit
        in 32 bits, in operations a 32-bit rendering supports."""
        if e not in self._memo:
            self._memo[e] = e.type == I64 and _fits(self.interval(e)) and self._parts_narrow(e)
        return self._memo[e]

    def _parts_narrow(self, e: Expr) -> bool:
        if isinstance(e, (Const, InstanceId, InstanceCount)):
            return True
        if isinstance(e, Var):
            return e.name in self.variables or e.name in self.symbols and e.name not in self.ranges
        if isinstance(e, Binary):  # (an unsafe divisor already left the interval unbounded)
            return e.op in NARROW_OPS and self.is_narrow(e.lhs) and self.is_narrow(e.rhs)
        if isinstance(e, Intrinsic):
            return e.name in ("min", "max") and all(self.is_narrow(a) for a in e.args)
        if isinstance(e, Select):
            return self.is_narrow(e.if_true) and self.is_narrow(e.if_false)
        if isinstance(e, Cast):
            return e.value.type.is_int and e.value.type.bits <= 32
        return False


def _c_quotient(x: int, d: int) -> int:
    """x / d as C computes it (truncated toward zero)."""
    q = abs(x) // abs(d)
    return q if (x >= 0) == (d > 0) else -q


def _safe_divisor(e: Binary) -> int | None:
    if isinstance(e.rhs, Const) and e.rhs.type.is_int and int(e.rhs.value) not in (0, -1):
        return int(e.rhs.value)
    return None


def _type_range(t) -> Interval:
    if t.is_bool:
        return (0, 1)
    if t.is_signed:
        return (-2 ** (t.bits - 1), 2 ** (t.bits - 1) - 1)
    return (0, 2 ** t.bits - 1)


def _fits(interval: Interval) -> bool:
    return interval == BOTTOM or INT_MIN <= interval[0] and interval[1] <= INT_MAX


def _clipped(interval: Interval) -> Interval:
    """Past the 32-bit range nothing more is worth knowing."""
    return interval if _fits(interval) else TOP


def _meet(a: Interval, b: Interval) -> Interval:
    return (max(a[0], b[0]), min(a[1], b[1]))


def _join_all(intervals) -> Interval:
    lo, hi = math.inf, -math.inf
    for a in intervals:
        lo, hi = min(lo, a[0]), max(hi, a[1])
    return (lo, hi)
