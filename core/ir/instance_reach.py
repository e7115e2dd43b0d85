"""How far an index reaches from the instance's own id: the test that a
stencil's reads stay inside a tile around its work group.

``reach(index, dim)`` is a bound on ``|index - instance_id(dim)|`` over
every instance, or None when none is found.  It follows what stencils
write:

- the instance id reaches 0;
- a variable reaches as far as the farthest of the values it is given
  (declared with, or assigned; a variable read before it is given one is
  undefined);
- ``e + k`` and ``e - k`` add the largest magnitude of ``k``: a constant,
  a loop variable of a loop with constant bounds, or sums of those;
- clamping keeps a reach: ``max(e, lo)`` with ``lo`` a constant at most 0,
  and ``min(e, hi)`` with ``hi`` the replication's size less at least 1
  (an instance id lies in between, and clamping toward an interval that
  holds it moves ``e`` no farther from it).
"""
from __future__ import annotations

from .kernel import (
    Assign, AtomicUpdate, Binary, Cast, Const, Expr, For, InstanceCount, InstanceId, Intrinsic,
    Let, Load, Var,
)
from .visit import walk


class InstanceReach:
    """Reach analysis over one kernel body, whose node's replication sizes
    are ``counts``."""

    def __init__(self, body, counts: tuple[Expr, ...]):
        self.values: dict[str, list[Expr]] = {}
        loops: dict[str, list[For]] = {}
        unknown = set()
        for node in walk(body):
            if isinstance(node, (Let, Assign)) and node.value is not None:
                self.values.setdefault(node.name, []).append(node.value)
            elif isinstance(node, AtomicUpdate) and node.result is not None:
                unknown.add(node.result)
            elif isinstance(node, For):
                loops.setdefault(node.var, []).append(node)
        self.loops = {var: (found[0].start, found[0].stop) for var, found in loops.items()
                      if len(found) == 1 and found[0].step > 0 and var not in self.values}
        for name in unknown | loops.keys():
            self.values.pop(name, None)
        self.counts = counts
        self._open: set[str] = set()

    def _over_values(self, name: str, measure) -> int | None:
        """The largest ``measure`` of the values variable ``name`` is given
        (None for one that depends on itself)."""
        if name in self._open:
            return None
        self._open.add(name)
        try:
            found = [measure(value) for value in self.values[name]]
        finally:
            self._open.discard(name)
        return None if None in found else max(found)

    def reach(self, index: Expr, dim: int) -> int | None:
        """A bound on ``|index - instance_id(dim)|``, or None."""
        if isinstance(index, InstanceId):
            return 0 if index.dim == dim else None
        if isinstance(index, Var) and index.name in self.values:
            return self._over_values(index.name, lambda value: self.reach(value, dim))
        if isinstance(index, Cast) and index.type.is_int:
            return self.reach(index.value, dim)
        if isinstance(index, Binary) and index.op in ("add", "sub"):
            sides = [(index.lhs, index.rhs)] + ([(index.rhs, index.lhs)] if index.op == "add"
                                                 else [])
            for near, offset in sides:
                distance, magnitude = self.reach(near, dim), self.magnitude(offset)
                if distance is not None and magnitude is not None:
                    return distance + magnitude
            return None
        if isinstance(index, Intrinsic) and index.name in ("min", "max") and len(index.args) == 2:
            limit = self._is_upper_limit if index.name == "min" else self._is_lower_limit
            for inner, bound in (index.args, tuple(reversed(index.args))):
                if limit(bound, dim):
                    return self.reach(inner, dim)
        return None

    def of_load(self, load: Load, positions: tuple[int, ...]) -> tuple[int, ...] | None:
        """How far ``load``'s element lies from its instance along each
        replication dimension (its index at ``positions[d]`` for dimension
        d), or None."""
        reaches = tuple(self.reach(load.indices[p], dim) for dim, p in enumerate(positions))
        return None if None in reaches else reaches

    def within(self, load: Load, positions: tuple[int, ...], halos: tuple[int, ...]) -> bool:
        """Whether ``load``'s element is known to lie within ``halos`` of its
        instance along every dimension."""
        found = self.of_load(load, positions)
        return found is not None and all(r <= h for r, h in zip(found, halos))

    def magnitude(self, expr: Expr) -> int | None:
        """The largest ``|expr|`` over every instance, where ``expr`` is a
        constant, a variable of a loop with constant bounds, or sums and
        differences of those; else None."""
        if isinstance(expr, Const) and not isinstance(expr.value, float):
            return abs(int(expr.value))
        if isinstance(expr, Var) and expr.name in self.values:
            return self._over_values(expr.name, self.magnitude)
        if isinstance(expr, Var) and expr.name in self.loops:
            start, stop = self.loops[expr.name]
            if isinstance(start, Const) and isinstance(stop, Const) and stop.value > start.value:
                return max(abs(int(start.value)), abs(int(stop.value) - 1))
            return None
        if isinstance(expr, Binary) and expr.op in ("add", "sub"):
            sides = (self.magnitude(expr.lhs), self.magnitude(expr.rhs))
            return None if None in sides else sides[0] + sides[1]
        return None

    def _is_lower_limit(self, expr: Expr, dim: int) -> bool:
        return isinstance(expr, Const) and not isinstance(expr.value, float) and expr.value <= 0

    def _is_upper_limit(self, expr: Expr, dim: int) -> bool:
        """Whether ``expr`` is the replication's size along ``dim`` less a
        constant of at least 1 (so no smaller than any instance id)."""
        if isinstance(expr, Var) and len(self.values.get(expr.name, ())) == 1 \
                and self.values[expr.name][0] != expr:
            return self._is_upper_limit(self.values[expr.name][0], dim)
        if not (isinstance(expr, Binary) and expr.op == "sub" and isinstance(expr.rhs, Const)
                and not isinstance(expr.rhs.value, float) and expr.rhs.value >= 1):
            return False
        size = expr.lhs
        if isinstance(size, Var) and len(self.values.get(size.name, ())) == 1:
            size = self.values[size.name][0]
        return (isinstance(size, InstanceCount) and size.dim == dim) or (
            dim < len(self.counts) and size == self.counts[dim])
